"""A job from claim to spooled terminal message: outcomes, local timeout and cancel reasons, run
with the real ``process`` executor."""

from __future__ import annotations

import queue
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TypeVar

import pytest

from benchrunner.core.clock import ThreadClock
from benchrunner.core.templates import TemplateRegistry
from benchrunner.protocol import (
    Canceled,
    Completed,
    Failed,
    IterationResult,
    JsonClaimedJob,
    TerminalMessage,
)
from benchrunner.runner.cores import CorePlan
from benchrunner.runner.events import AgentEvent, JobFinished, JobStarted
from benchrunner.runner.executors import ProcessExecutor
from benchrunner.runner.executors.process import ProcessJob
from benchrunner.runner.job import CancelReason, JobRun
from benchrunner.runner.slot import JobSlot
from benchrunner.runner.spool import Spool
from tests.harness import wait_until
from tests.thread_clock import ManualThreadClock
from tests.unit.claimed_jobs import claimed_job

ExecutorT = TypeVar("ExecutorT", bound=ProcessExecutor)

TEMPLATES = TemplateRegistry.parse(
    {
        "templates": {
            "script": {
                "command": [sys.executable, "-c", "{code}"],
                "args": {"code": {"type": "string"}},
            },
            "missing": {"command": ["/nonexistent/benchmark-binary"]},
        }
    }
)
# Prints its iteration; exits with the code listed for it (default 0); sleeps when told to.
PER_ITERATION = (
    "import os, sys, time; i = int(os.environ['BENCHRUNNER_ITERATION']); print(i); "
    "time.sleep({sleeps}.get(i, 0)); sys.exit({codes}.get(i, 0))"
)


def claimed(
    code: str,
    *,
    iterations: int = 1,
    timeout: int = 60,
    template: str = "script",
    allow_failure: bool | None = None,
) -> JsonClaimedJob:
    config: dict[str, object] = {
        "timeout": timeout,
        "iter": iterations,
        "template": template,
        "args": {"code": code},
    }
    if allow_failure is not None:
        config["allow_failure"] = allow_failure
    return claimed_job(config)


def per_iteration(
    codes: dict[int, int] | None = None, sleeps: dict[int, float] | None = None
) -> str:
    return PER_ITERATION.format(codes=codes or {}, sleeps=sleeps or {})


class Harness:
    def __init__(self, spool_dir: Path) -> None:
        self.events: queue.SimpleQueue[AgentEvent] = queue.SimpleQueue()
        self.spool = Spool(spool_dir)
        self.executor = ProcessExecutor(TEMPLATES, kill_grace=2.0)

    def start(self, job: JsonClaimedJob, clock: ThreadClock | None = None) -> JobRun:
        run = JobRun(
            job,
            executor=self.executor,
            spool=self.spool,
            post=self.events.put,
            cores=CorePlan(),
            clock=clock,
        )
        run.start()
        return run

    def use(self, executor: ExecutorT) -> ExecutorT:
        self.executor.close()
        self.executor = executor
        return executor

    def next_event(self) -> AgentEvent:
        return self.events.get(timeout=20)

    def finish(self, job: JsonClaimedJob) -> TerminalMessage:
        return self.result_of(self.start(job))

    def result_of(self, run: JobRun) -> TerminalMessage:
        while True:
            event = self.next_event()
            if isinstance(event, JobFinished):
                assert event.job == run.uuid
                assert run.join(10)
                # Spooled before the agent hears of it.
                assert self.spool.read(run.uuid) == event.message
                return event.message


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[Harness]:
    harness = Harness(tmp_path / "spool")
    yield harness
    harness.executor.close()  # removes the next job's working directory, made ahead


def test_all_iterations_exit_zero_is_completed(harness: Harness) -> None:
    job = claimed(per_iteration(), iterations=3)
    message = harness.finish(job)
    assert isinstance(message, Completed)
    assert [(r.exit_code, r.stdout) for r in message.results] == [
        (0, "0\n"),
        (0, "1\n"),
        (0, "2\n"),
    ]


def test_started_is_posted_before_finished(harness: Harness) -> None:
    run = harness.start(claimed(per_iteration()))
    assert harness.next_event() == JobStarted(run.uuid)
    assert isinstance(harness.next_event(), JobFinished)


def test_started_is_posted_once_the_process_runs_and_never_for_one_that_cannot_start(
    harness: Harness, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    run = harness.start(claimed(f"open({str(marker)!r}, 'w').close(); import time; time.sleep(1)"))
    assert harness.next_event() == JobStarted(run.uuid)
    wait_until(marker.exists, message="the job's process to have run")
    assert isinstance(harness.result_of(run), Completed)
    refused = harness.start(claimed_job({"timeout": 60, "iter": 1, "template": "missing"}))
    event = harness.next_event()
    assert isinstance(event, JobFinished)  # no running before it
    assert isinstance(event.message, Failed)
    assert event.message.error == (
        "iteration 0 could not start '/nonexistent/benchmark-binary': No such file or directory"
    )
    assert refused.join(10)


def test_jobs_on_a_slot_run_one_after_another_on_its_thread(harness: Harness) -> None:
    slot = JobSlot(CorePlan())
    try:
        runs = [
            JobRun(
                claimed(per_iteration()),
                executor=harness.executor,
                spool=harness.spool,
                post=harness.events.put,
                cores=CorePlan(),
                slot=slot,
            )
            for _ in range(2)
        ]
        for run in runs:
            run.start()
        for run in runs:
            assert isinstance(harness.result_of(run), Completed)
    finally:
        slot.close()


def test_first_failing_iteration_fails_the_job_and_stops_it(harness: Harness) -> None:
    message = harness.finish(claimed(per_iteration(codes={1: 3}), iterations=4))
    assert isinstance(message, Failed)
    assert message.error == "iteration 1 exited with code 3"
    assert [r.exit_code for r in message.results] == [0, 3]


def test_with_allow_failure_a_failing_iteration_neither_fails_nor_stops_the_job(
    harness: Harness,
) -> None:
    job = claimed(per_iteration(codes={1: 3}), iterations=3, allow_failure=True)
    message = harness.finish(job)
    assert isinstance(message, Completed)
    assert [r.exit_code for r in message.results] == [0, 3, 0]


def test_setup_refusal_fails_without_results_or_start(harness: Harness) -> None:
    run = harness.start(claimed("pass", template="not.approved"))
    event = harness.next_event()
    assert isinstance(event, JobFinished)
    assert event.message == Failed(
        job=run.uuid,
        results=[],
        error=(
            "template 'not.approved' is not approved on this runner "
            "(runner templates: missing, script)"
        ),
    )


def test_an_executor_with_a_slow_setup_reports_running_before_it(harness: Harness) -> None:
    # What the sandbox does, so that heartbeats flow while it pulls an image.
    harness.executor.starts_before_setup = True
    run = harness.start(claimed("pass", template="not.approved"))
    assert harness.next_event() == JobStarted(run.uuid)
    message = harness.result_of(run)
    assert isinstance(message, Failed)
    assert message.error is not None and "not approved" in message.error
    completed = harness.start(claimed(per_iteration()))
    assert harness.next_event() == JobStarted(completed.uuid)  # once, not again per iteration
    assert isinstance(harness.next_event(), JobFinished)


def test_local_timeout_fails_the_job_with_the_results_so_far(harness: Harness) -> None:
    job = claimed(per_iteration(sleeps={1: 30}), iterations=3, timeout=1)
    message = harness.finish(job)
    assert isinstance(message, Failed)
    assert message.error == "job exceeded its timeout of 1 s"
    assert [r.exit_code for r in message.results] == [0, 128 + 15]


def test_the_local_timeout_falls_due_on_the_runners_clock(harness: Harness, tmp_path: Path) -> None:
    second = tmp_path / "second"
    code = (
        "import os, time; i = int(os.environ['BENCHRUNNER_ITERATION']); "
        f"i == 1 and (open({str(second)!r}, 'w').close(), time.sleep(30))"
    )
    clock = ManualThreadClock(start=1000.0)
    run = harness.start(claimed(code, iterations=3, timeout=60), clock)
    wait_until(second.exists, message="the second iteration running")
    # The timeout counts from the end of setup, on the clock the job was given.
    wait_until(lambda: clock.waiting() == [1060.0], message="the timeout's wait")
    clock.advance(59.0)
    wait_until(lambda: clock.waiting() == [1060.0], message="the timeout waiting on")
    assert harness.next_event() == JobStarted(run.uuid)
    assert harness.events.empty()  # still running: the clock has not reached the timeout
    assert run.cancel_reason is None
    clock.advance(1.0)
    message = harness.result_of(run)
    assert isinstance(message, Failed)
    assert message.error == "job exceeded its timeout of 60 s"
    assert [r.exit_code for r in message.results] == [0, 128 + 15]


def test_a_job_that_ends_in_time_leaves_no_timeout_waiting(harness: Harness) -> None:
    clock = ManualThreadClock(start=1000.0)
    message = harness.result_of(harness.start(claimed(per_iteration()), clock))
    assert isinstance(message, Completed)
    wait_until(lambda: clock.waiting() == [], message="the timeout's thread gone")
    clock.advance(3600.0)
    assert harness.events.empty()


@pytest.mark.parametrize(
    ("reason", "error"),
    [
        (CancelReason.DRAIN, "runner drained: job canceled after drain grace period"),
        (CancelReason.SHUTDOWN, "runner shut down: job canceled"),
    ],
)
def test_runner_side_cancel_is_reported_failed(
    harness: Harness, tmp_path: Path, reason: CancelReason, error: str
) -> None:
    started = tmp_path / "started"
    run = harness.start(
        claimed(f"import time; open({str(started)!r}, 'w').close(); time.sleep(30)")
    )
    wait_until(started.exists)
    run.cancel(reason)
    message = harness.result_of(run)
    assert isinstance(message, Failed)
    assert message.error == error
    assert [r.exit_code for r in message.results] == [128 + 15]


def test_server_cancel_is_reported_canceled(harness: Harness) -> None:
    run = harness.start(claimed(per_iteration(sleeps={0: 30})))
    assert harness.next_event() == JobStarted(run.uuid)
    run.cancel(CancelReason.SERVER)
    run.cancel(CancelReason.DRAIN)  # the first reason wins
    assert harness.result_of(run) == Canceled(job=run.uuid)


class CancelsAfterEachIteration(ProcessExecutor):
    """Asks for the run's stop as each iteration's process has exited, before the job thread
    looks: where a runner resumed after a pause hears the server's cancel."""

    run: JobRun | None = None
    reason = CancelReason.SERVER

    def prepare(self, job: JsonClaimedJob) -> ProcessJob:
        prepared = super().prepare(job)
        iterate = prepared.run_iteration

        def run_iteration(index: int) -> IterationResult:
            result = iterate(index)
            assert self.run is not None
            self.run.cancel(self.reason)
            return result

        prepared.run_iteration = run_iteration  # type: ignore[method-assign]
        return prepared


def stopped_after_each_iteration(
    harness: Harness, job: JsonClaimedJob, reason: CancelReason
) -> TerminalMessage:
    """``job``'s result when a stop for ``reason`` is asked as each iteration ends."""
    executor = harness.use(CancelsAfterEachIteration(TEMPLATES, kill_grace=2.0))
    executor.reason = reason
    run = JobRun(
        job, executor=executor, spool=harness.spool, post=harness.events.put, cores=CorePlan()
    )
    executor.run = run
    run.start()
    return harness.result_of(run)


@pytest.mark.parametrize("reason", list(CancelReason))
def test_a_stop_after_the_last_iteration_exited_zero_keeps_the_result(
    harness: Harness, reason: CancelReason
) -> None:
    message = stopped_after_each_iteration(harness, claimed(per_iteration()), reason)
    assert isinstance(message, Completed), message
    assert [(r.exit_code, r.stdout) for r in message.results] == [(0, "0\n")]


def test_a_stop_after_an_earlier_iteration_still_stops_the_job(harness: Harness) -> None:
    job = claimed(per_iteration(), iterations=3)
    message = stopped_after_each_iteration(harness, job, CancelReason.SERVER)
    assert message == Canceled(job=job.uuid)


def test_a_stop_after_a_failing_last_iteration_is_the_stop(harness: Harness) -> None:
    job = claimed(per_iteration(codes={0: 3}))
    message = stopped_after_each_iteration(harness, job, CancelReason.TIMEOUT)
    assert isinstance(message, Failed)
    assert message.error == "job exceeded its timeout of 60 s"
    assert [r.exit_code for r in message.results] == [3]


def test_a_stop_that_a_benchmark_answers_by_exiting_zero_is_still_the_stop(
    harness: Harness, tmp_path: Path
) -> None:
    trapping = tmp_path / "trapping"
    code = (
        "import signal, sys, time; signal.signal(signal.SIGTERM, lambda *_: sys.exit(0)); "
        f"open({str(trapping)!r}, 'w').close(); time.sleep(30)"
    )
    run = harness.start(claimed(code))
    assert harness.next_event() == JobStarted(run.uuid)
    wait_until(trapping.exists, message="the benchmark's SIGTERM handler in place")
    run.cancel(CancelReason.SERVER)
    assert harness.result_of(run) == Canceled(job=run.uuid)


def test_cancel_before_setup_runs_nothing(harness: Harness, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    job = claimed(f"open({str(marker)!r}, 'w').close()")
    run = JobRun(
        job,
        executor=harness.executor,
        spool=harness.spool,
        post=harness.events.put,
        cores=CorePlan(),
    )
    # An executor that reports running before setup would otherwise announce (and prepare) it.
    harness.executor.starts_before_setup = True
    run.cancel(CancelReason.SERVER)
    run.start()
    finished = harness.next_event()
    assert isinstance(finished, JobFinished), finished  # no JobStarted: nothing was set up
    assert finished.message == Canceled(job=run.uuid)
    assert run.join(10)
    assert not marker.exists()


def test_crash_hook_is_inert_without_its_variable(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("BENCHRUNNER_TEST_CRASH_AFTER_SPOOL", raising=False)
    assert isinstance(harness.finish(claimed(per_iteration())), Completed)
