"""The noise guard: a short calibration loop of fixed work on the job's cores, right before and
right after the job (docs/decisions/noise.md). Its coefficient of variation says how noisy the
machine was, and the before/after drift whether it changed while the job ran (a neighbour starting,
the package heating up), both independently of what the job itself measures.

The work is SHA-256 over a fixed buffer: C code that releases the GIL, so the runner's own
threads (heartbeat, log streamer) do not queue behind it, and that depends on the core's
speed alone, not on memory or I/O.
"""

from __future__ import annotations

import logging
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from benchrunner.core.clock import SystemThreadClock, ThreadClock
from benchrunner.protocol import NoiseCalibration, NoiseGuard
from benchrunner.runner import calibration_child
from benchrunner.runner.calibration_child import fixed_work
from benchrunner.runner.clock_timer import ProcessExit
from benchrunner.runner.cores import CorePlan

log = logging.getLogger(__name__)


class CalibrationError(RuntimeError):
    """The calibration's own process failed; the job runs without a noise guard."""


ROUNDS = 512
"""Some 35 µs a round on this project's CI cores: 512 rounds are about 18 ms, several scheduler
ticks (4 ms at ``CONFIG_HZ=250``), so a neighbour that takes the core for a tick at a time shows
in the rounds instead of falling between two short calibrations.

Short rounds let a calibration taken while the runner is idle give way within one round when a
job arrives, and they still measure: the clock's resolution and overhead (tens of ns) are a
thousandth of a round, far below the limits a report is judged by (percents). What a round
shorter than a tick sees of a preemption is a large outlier in one round, not a small excess
spread thin over long ones; for a guard whose question is "did anything else run on these
cores" that is the signal. The cost is the calibration after each job (the one before is taken
while idle): about 18 ms of the job core, nothing of a real benchmark's minutes."""
CHILD_POLL = 0.005
"""Seconds between two looks at ``stop()`` while a child process calibrates."""


@dataclass(frozen=True)
class NoiseProbe:
    """Runs the calibration; ``clock`` (nanoseconds) and ``work`` are injected in tests;
    ``waits``: the runner's clock, on which a calibrating child's ``stop()`` is looked at."""

    rounds: int = ROUNDS
    clock: Callable[[], int] = time.perf_counter_ns
    work: Callable[[], object] | None = None
    waits: ThreadClock = field(default_factory=SystemThreadClock)

    def calibrate(self, cores: CorePlan) -> NoiseCalibration:
        """Time ``rounds`` rounds of the fixed work with the calling thread on the job cores."""
        calibration = self.calibrate_unless(cores, _never)
        assert calibration is not None
        return calibration

    def calibrate_unless(
        self, cores: CorePlan, stop: Callable[[], bool]
    ) -> NoiseCalibration | None:
        """As ``calibrate``, but None as soon as ``stop()`` is true between two rounds.

        Job cores in a cpuset partition are calibrated by a process of their own, moved into
        the partition (``clock`` and ``work`` are not used there)."""
        if cores.job_cgroup is not None:
            return self._calibrate_in_partition(cores, stop)
        work = self.work or fixed_work
        times: list[int] = []
        with cores.job_affinity():
            work()  # warm-up: caches, frequency ramp, lazy imports
            for _ in range(self.rounds):
                if stop():
                    return None
                start = self.clock()
                work()
                times.append(self.clock() - start)
        return summarize(times)

    def _calibrate_in_partition(
        self, cores: CorePlan, stop: Callable[[], bool]
    ) -> NoiseCalibration | None:
        command = [sys.executable, "-I", "-S", calibration_child.__file__, str(self.rounds)]
        with subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        ) as child:
            assert child.stdin is not None
            cores.admit(child.pid)
            try:
                child.stdin.write("go\n")
                child.stdin.close()
            except BrokenPipeError:
                pass  # it died already: its exit status says why
            if not self._wait(child, stop):
                child.kill()
                child.wait()
                return None
            assert child.stdout is not None and child.stderr is not None
            out, err = child.stdout.read(), child.stderr.read()  # a line: no pipe fills up
        times = [int(t) for t in out.split()] if child.returncode == 0 else []
        if len(times) != self.rounds:
            raise CalibrationError(
                f"calibration process exited {child.returncode}: {err.strip()[-300:]}"
            )
        return summarize(times)

    def _wait(self, child: subprocess.Popen[str], stop: Callable[[], bool]) -> bool:
        """True once ``child`` has exited; False as soon as ``stop()`` is true, looked at before
        each wait of ``CHILD_POLL`` on the runner's clock (a stop already due wins over a child
        that ended meanwhile)."""
        ended = ProcessExit(child)
        while not stop():
            if ended.wait(self.waits, self.waits.monotonic() + CHILD_POLL):
                return True
        return False


def _never() -> bool:
    return False


BLOCKS = 16
"""Consecutive blocks a calibration's rounds are cut into for its ``spread``: 32 rounds (about
1 ms) each at the default 512 rounds, so that one round's preemption stays inside one block and
cannot move its median."""


def summarize(times: list[int]) -> NoiseCalibration:
    """Median, coefficient of variation and speed spread of the rounds' times (ns). Raises
    ValueError for no rounds."""
    if not times:
        raise ValueError("a calibration needs at least one round")
    mean = statistics.fmean(times)
    deviation = statistics.stdev(times) if len(times) > 1 else 0.0
    return NoiseCalibration(
        rounds=len(times),
        median_ns=round(statistics.median(times)),
        cv=deviation / mean if mean > 0 else 0.0,
        spread=speed_spread(times),
    )


def speed_spread(times: list[int], blocks: int = BLOCKS) -> float:
    """The interquartile range of the medians of ``blocks`` consecutive blocks of rounds, over
    the median of those medians (0 for fewer than two blocks' worth of rounds).

    Robust where the CV is not: a few rounds that met a scheduler tick (one round in a hundred
    taking a millisecond makes a CV of hundreds of percent) move no block's median. What moves
    them is what would move a benchmark's result too: the core running slower for a while (a
    busy sibling thread, a frequency change, another process sharing it)."""
    size = len(times) // blocks
    if size == 0:
        return 0.0
    medians = [statistics.median(times[i * size : (i + 1) * size]) for i in range(blocks)]
    middle = statistics.median(medians)
    first, _, third = statistics.quantiles(medians, n=4, method="inclusive")
    return (third - first) / middle if middle > 0 else 0.0


def guard(
    before: NoiseCalibration, after: NoiseCalibration | None, before_age_ms: float | None = None
) -> NoiseGuard:
    drift = (
        after.median_ns / before.median_ns - 1
        if after is not None and before.median_ns > 0
        else None
    )
    return NoiseGuard(before=before, after=after, drift=drift, before_age_ms=before_age_ms)
