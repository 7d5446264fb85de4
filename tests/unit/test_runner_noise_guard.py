"""The noise guard: its statistics, its calibration on the job cores, and a job's terminal
message carrying it (real ``process`` executor, real job thread)."""

from __future__ import annotations

import dataclasses
import itertools
import os
import queue
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from benchrunner.protocol import Completed, Failed, NoiseCalibration
from benchrunner.runner import procfs
from benchrunner.runner.cores import CorePlan
from benchrunner.runner.events import AgentEvent, JobFinished, JobStarted
from benchrunner.runner.executors import ProcessExecutor
from benchrunner.runner.idle_calibration import IdleCalibration, TakenCalibration
from benchrunner.runner.job import JobRun
from benchrunner.runner.noise_guard import (
    CHILD_POLL,
    CalibrationError,
    NoiseProbe,
    guard,
    speed_spread,
    summarize,
)
from benchrunner.runner.spool import Spool
from tests.harness import wait_until
from tests.thread_clock import ManualThreadClock
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


def test_a_few_rounds_that_met_a_tick_leave_the_spread_alone() -> None:
    """Idle machine: 512 rounds of 35 us, five of them preempted for 3 ms. The CV explodes;
    the spread of the blocks' medians does not move."""
    quiet = [35_000 + (i % 7) * 50 for i in range(512)]
    ticked = list(quiet)
    for i in (3, 100, 250, 400, 511):
        ticked[i] = 3_000_000
    found = summarize(ticked)
    assert found.cv > 3.0
    assert found.spread is not None and found.spread < 0.01
    assert found.spread == pytest.approx(summarize(quiet).spread)


def test_a_core_slowed_for_a_while_shows_in_the_spread() -> None:
    """A neighbour that slows the core by 20 % for half the calibration: every round a little
    slower, no outlier; the spread says the machine would hide a change of that size."""
    times = [35_000 if i < 256 else 42_000 for i in range(512)]
    assert summarize(times).spread == pytest.approx(7_000 / 38_500)  # IQR / median


@pytest.mark.parametrize(
    ("times", "spread"),
    [([100], 0.0), ([100] * 15, 0.0), ([100] * 16, 0.0), (list(range(100, 132)), 15 / 115.5)],
)
def test_speed_spread(times: list[int], spread: float) -> None:
    assert speed_spread(times) == pytest.approx(spread, abs=0.005)


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
    first = NoiseCalibration(rounds=3, median_ns=before, cv=0.0)
    second = None if after is None else NoiseCalibration(rounds=3, median_ns=after, cv=0.0)
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
    executor = ProcessExecutor(TEMPLATES, kill_grace=2.0)
    run = JobRun(
        claimed(code),
        executor=executor,
        spool=Spool(tmp_path / "spool"),
        post=events.put,
        cores=CorePlan(),
        noise=probe,
    )
    run.start()
    while not isinstance(event := events.get(timeout=20), JobFinished):
        pass
    assert run.join(10)
    executor.close()  # removes the next job's working directory, made ahead
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
    assert message.noise.before == NoiseCalibration(rounds=3, median_ns=1000, cv=0.0, spread=0.0)
    assert message.noise.after == NoiseCalibration(rounds=3, median_ns=1100, cv=0.0, spread=0.0)
    assert message.noise.drift == pytest.approx(0.1)
    failed = run_job(tmp_path, per_iteration(codes={0: 3}), NoiseProbe(rounds=2))
    assert isinstance(failed, Failed) and failed.noise is not None
    assert failed.noise.after is not None


def test_without_a_noise_guard_the_output_has_none(tmp_path: Path) -> None:
    assert run_job(tmp_path, per_iteration(), None).noise is None


def run_recorded(
    tmp_path: Path, probe: NoiseProbe, before: TakenCalibration | None, spec_guard: bool = True
) -> tuple[list[str], Completed | Failed]:
    """Run a job, recording calibration rounds and the job's start in the order they happen."""
    order: list[str] = []
    events: queue.SimpleQueue[AgentEvent] = queue.SimpleQueue()

    def post(event: AgentEvent) -> None:
        if isinstance(event, JobStarted):
            order.append("job process started")
        events.put(event)

    job = claimed(per_iteration())
    if not spec_guard:
        job = job.model_copy(update={"spec": job.spec.model_copy(update={"noise_guard": False})})
    executor = ProcessExecutor(TEMPLATES, kill_grace=2.0)
    run = JobRun(
        job,
        executor=executor,
        spool=Spool(tmp_path / "spool"),
        post=post,
        cores=CorePlan(),
        noise=dataclasses.replace(probe, work=lambda: order.append("calibration round")),
        before=before,
    )
    run.start()
    while not isinstance(event := events.get(timeout=20), JobFinished):
        pass
    assert run.join(10)
    executor.close()  # removes the next job's working directory, made ahead
    assert isinstance(event.message, Completed | Failed)
    return order, event.message


def test_a_before_taken_while_idle_keeps_calibration_off_the_jobs_way(tmp_path: Path) -> None:
    idle = NoiseCalibration(rounds=3, median_ns=1000, cv=0.01)
    taken = TakenCalibration(idle, time.monotonic() - 0.25)
    order, message = run_recorded(tmp_path, NoiseProbe(rounds=3), taken)
    # Nothing between the job's arrival and its process: every round comes after it.
    assert order[0] == "job process started"
    assert order[1:] == ["calibration round"] * 4  # the calibration after: warm-up + 3 rounds
    assert message.noise is not None and message.noise.before == idle
    assert message.noise.after is not None
    assert message.noise.before_age_ms is not None
    assert 250 <= message.noise.before_age_ms < 250 + 20_000


def test_without_an_idle_before_the_job_calibrates_first(tmp_path: Path) -> None:
    order, message = run_recorded(tmp_path, NoiseProbe(rounds=2), None)
    assert order == ["calibration round"] * 3 + ["job process started"] + ["calibration round"] * 3
    assert message.noise is not None and message.noise.before_age_ms is not None


def test_a_spec_without_noise_guard_gets_no_calibration(tmp_path: Path) -> None:
    taken = TakenCalibration(NoiseCalibration(rounds=3, median_ns=1000, cv=0.0), time.monotonic())
    order, message = run_recorded(tmp_path, NoiseProbe(rounds=2), taken, spec_guard=False)
    assert order == ["job process started"]
    assert message.noise is None


def test_idle_calibration_is_due_when_missing_or_old_and_taken_once() -> None:
    now = [100.0]
    idle = IdleCalibration(
        NoiseProbe(rounds=2, work=lambda: None), CorePlan(), max_age=1.0, clock=lambda: now[0]
    )
    assert idle.due(now[0]) and idle.deadline() is None
    assert idle.refresh(stop=lambda: False)
    assert not idle.due(100.5) and idle.due(101.0)
    assert idle.deadline() == 101.0
    taken = idle.take()
    assert taken is not None and taken.taken_at == 100.0
    assert idle.take() is None and idle.due(100.1)


def test_an_idle_refresh_gives_way_within_a_round_and_keeps_the_latest() -> None:
    rounds: list[int] = []
    idle = IdleCalibration(
        NoiseProbe(rounds=32, work=lambda: rounds.append(1)), CorePlan(), max_age=1.0
    )
    assert idle.refresh(stop=lambda: False)
    kept = idle.deadline()
    rounds.clear()
    assert not idle.refresh(stop=lambda: len(rounds) >= 3)  # a job arrived after two rounds
    assert len(rounds) == 3  # the warm-up and two rounds: nothing more
    assert idle.deadline() == kept


@dataclasses.dataclass(frozen=True)
class BrokenProbe(NoiseProbe):
    """A calibration whose process fails, as one killed from outside would."""

    def calibrate_unless(
        self, cores: CorePlan, stop: Callable[[], bool]
    ) -> NoiseCalibration | None:
        raise CalibrationError("calibration process exited -9: ")


def test_a_failed_calibration_leaves_the_job_running_without_a_noise_guard(
    tmp_path: Path,
) -> None:
    message = run_job(tmp_path, per_iteration(), BrokenProbe())
    assert isinstance(message, Completed) and message.noise is None


def test_a_failed_idle_calibration_is_not_retried_before_its_max_age() -> None:
    now = [100.0]
    idle = IdleCalibration(BrokenProbe(), CorePlan(), max_age=1.0, clock=lambda: now[0])
    assert idle.due(now[0])
    assert not idle.refresh(stop=lambda: False)
    assert not idle.due(now[0] + 0.5) and idle.take() is None
    assert idle.due(now[0] + 1.0)


def test_in_a_partition_a_child_process_admitted_to_it_calibrates(tmp_path: Path) -> None:
    procs = tmp_path / "cgroup.procs"  # a plain file: each admission overwrites the pid
    procs.write_text("")
    probe = NoiseProbe(rounds=5, work=lambda: pytest.fail("a round ran in the runner"))
    plan = CorePlan(housekeeping=None, job_cores=frozenset(), job_cgroup=procs)
    calibration = probe.calibrate(plan)
    assert calibration.rounds == 5 and calibration.median_ns > 0
    assert procs.read_text().isdigit() and int(procs.read_text()) != os.getpid()
    assert probe.calibrate_unless(plan, stop=lambda: True) is None  # stopped: the child killed


def test_a_calibrating_child_is_stopped_when_the_runners_clock_says(tmp_path: Path) -> None:
    clock = ManualThreadClock(start=1000.0)
    procs = tmp_path / "cgroup.procs"
    procs.write_text("")
    probe = NoiseProbe(rounds=10_000_000, waits=clock)  # minutes of rounds: it never ends alone
    plan = CorePlan(housekeeping=None, job_cores=frozenset(), job_cgroup=procs)
    stopping = threading.Event()
    results: list[NoiseCalibration | None] = []
    thread = threading.Thread(
        target=lambda: results.append(probe.calibrate_unless(plan, stop=stopping.is_set))
    )
    thread.start()
    wait_until(lambda: clock.waiting() == [1000.0 + CHILD_POLL], message="the first look's wait")
    child = int(procs.read_text())
    stopping.set()
    assert thread.is_alive()  # stop() is looked at when the clock says, not before
    clock.advance(CHILD_POLL)
    thread.join(30)
    assert not thread.is_alive()
    assert results == [None]
    info = procfs.process(child)
    assert info is None or info.ended
