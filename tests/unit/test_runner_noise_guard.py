"""The noise guard: its statistics, its calibration on the job cores, and a job's terminal
message carrying it (real ``process`` executor, real job thread)."""

from __future__ import annotations

import itertools
import os
import queue
from collections.abc import Callable
from pathlib import Path

import pytest

from benchrunner.protocol import Calibration, Completed, Failed
from benchrunner.runner.cores import CorePlan
from benchrunner.runner.events import AgentEvent, JobFinished
from benchrunner.runner.executors import ProcessExecutor
from benchrunner.runner.job import JobRun
from benchrunner.runner.noise_guard import NoiseProbe, guard, summarize
from benchrunner.runner.spool import Spool
from tests.unit.test_runner_job import TEMPLATES, claimed, per_iteration


@pytest.mark.parametrize(
    ("times", "median", "cv"),
    [
        ([100], 100, 0.0),
        ([100, 100, 100], 100, 0.0),
        ([90, 100, 110], 100, 0.1),
        ([100, 100, 100, 200], 100, 0.4),  # one slow round: stdev 50, mean 125
    ],
)
def test_summarize(times: list[int], median: int, cv: float) -> None:
    result = summarize(times)
    assert (result.rounds, result.median_ns) == (len(times), median)
    assert result.cv == pytest.approx(cv)


def test_summarize_refuses_no_rounds() -> None:
    with pytest.raises(ValueError, match="at least one round"):
        summarize([])


@pytest.mark.parametrize(
    ("before", "after", "drift"),
    [(1000, 1000, 0.0), (1000, 1050, 0.05), (1000, 900, -0.1), (1000, None, None)],
)
def test_drift_is_the_relative_change_of_the_median(
    before: int, after: int | None, drift: float | None
) -> None:
    first = Calibration(rounds=3, median_ns=before, cv=0.0)
    second = None if after is None else Calibration(rounds=3, median_ns=after, cv=0.0)
    result = guard(first, second)
    assert result.drift == (None if drift is None else pytest.approx(drift))


def ticking(steps: list[int]) -> Callable[[], int]:
    """A clock whose readings are start/end pairs that are ``steps`` apart, in turn."""
    now = itertools.count(0, 1000)
    durations = itertools.cycle(steps)
    pending: list[int] = []

    def clock() -> int:
        if pending:
            return pending.pop()
        start = next(now) * 1000
        pending.append(start + next(durations))
        return start

    return clock


def test_calibration_times_each_round_with_the_injected_clock() -> None:
    probe = NoiseProbe(rounds=4, clock=ticking([100, 100, 100, 200]), work=lambda: None)
    result = probe.calibrate(CorePlan())
    assert (result.rounds, result.median_ns) == (4, 100)
    assert result.cv == pytest.approx(0.4)


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores")
def test_calibration_runs_on_the_job_cores_and_the_thread_goes_back() -> None:
    plan = CorePlan.detect()
    seen: list[set[int]] = []
    before = os.sched_getaffinity(0)
    NoiseProbe(rounds=2, work=lambda: seen.append(os.sched_getaffinity(0))).calibrate(plan)
    assert seen and all(cores == set(plan.job_cores) for cores in seen)
    assert os.sched_getaffinity(0) == before


def test_the_real_work_gives_a_plausible_calibration() -> None:
    calibration = NoiseProbe(rounds=3).calibrate(CorePlan())
    assert calibration.rounds == 3
    assert 10_000 < calibration.median_ns < 5_000_000_000  # 10 µs .. 5 s for 1 MiB of SHA-256


def run_job(tmp_path: Path, code: str, probe: NoiseProbe | None) -> Completed | Failed:
    events: queue.SimpleQueue[AgentEvent] = queue.SimpleQueue()
    run = JobRun(
        claimed(code),
        executor=ProcessExecutor(TEMPLATES, kill_grace=2.0),
        spool=Spool(tmp_path / "spool"),
        post=events.put,
        cores=CorePlan(),
        noise=probe,
    )
    run.start()
    while not isinstance(event := events.get(timeout=20), JobFinished):
        pass
    assert isinstance(event.message, Completed | Failed)
    assert Spool(tmp_path / "spool").read(run.uuid) == event.message
    return event.message


def test_a_job_output_carries_the_calibrations_before_and_after_it(tmp_path: Path) -> None:
    # The machine "slows down" by 10 % while the job runs.
    probe = NoiseProbe(
        rounds=3, clock=ticking([1000, 1000, 1000, 1100, 1100, 1100]), work=lambda: None
    )
    message = run_job(tmp_path, per_iteration(), probe)
    assert isinstance(message, Completed)
    assert message.noise is not None
    assert message.noise.before == Calibration(rounds=3, median_ns=1000, cv=0.0)
    assert message.noise.after == Calibration(rounds=3, median_ns=1100, cv=0.0)
    assert message.noise.drift == pytest.approx(0.1)
    failed = run_job(tmp_path, per_iteration(codes={0: 3}), NoiseProbe(rounds=2))
    assert isinstance(failed, Failed) and failed.noise is not None
    assert failed.noise.after is not None


def test_without_a_noise_guard_the_output_has_none(tmp_path: Path) -> None:
    assert run_job(tmp_path, per_iteration(), None).noise is None
