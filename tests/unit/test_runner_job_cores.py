"""Where the runner's threads and a job's processes run: each iteration's process is on the job
cores from its start (it inherits them from the thread that starts it), and that thread, the
job slot's, is back on the housekeeping core while the job runs."""

from __future__ import annotations

import logging
import os
import queue
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from benchrunner.core.templates import TemplateRegistry
from benchrunner.protocol import Completed
from benchrunner.runner import cores as cores_module
from benchrunner.runner.cores import CorePlan
from benchrunner.runner.events import AgentEvent, JobFinished
from benchrunner.runner.executors import ProcessExecutor
from benchrunner.runner.job import JobRun
from benchrunner.runner.slot import JobSlot
from benchrunner.runner.spool import Spool
from benchrunner.runner.tuning.cpulist import parse_cpulist
from tests.unit.claimed_jobs import claimed_job

TEMPLATES = TemplateRegistry.parse(
    {
        "templates": {
            "script": {
                "command": [sys.executable, "-c", "{code}"],
                "args": {"code": {"type": "string"}},
            }
        }
    }
)
# Prints the job process's allowed cores, then those of the thread that started it once that
# thread has left the job cores (or after 10 s, when it never did).
WHERE = """
import time
def allowed(path):
    for line in open(path):
        if line.startswith("Cpus_allowed_list:"):
            return line.split(":")[1].strip()
print(allowed("/proc/self/status"))
starter = "/proc/{pid}/task/{tid}/status"
deadline = time.monotonic() + 10
while allowed(starter) != "{housekeeping}" and time.monotonic() < deadline:
    time.sleep(0.005)
print(allowed(starter))
"""


@pytest.fixture
def plan() -> CorePlan:
    detected = CorePlan.detect()
    if not detected.pinned:
        pytest.skip("needs two cores")
    return detected


def allowed_now() -> frozenset[int]:
    return frozenset(os.sched_getaffinity(0))


def on_a_thread(work: list[object], body: Callable[[], object]) -> None:
    """Run ``body()`` on a thread of its own, appending what it returns to ``work``."""
    thread = threading.Thread(target=lambda: work.append(body()))
    thread.start()
    thread.join(10)
    assert not thread.is_alive()


def test_job_affinity_gives_the_thread_its_cores_back(plan: CorePlan) -> None:
    def body() -> tuple[frozenset[int], frozenset[int]]:
        plan.pin_to_housekeeping()
        with plan.job_affinity():
            inside = allowed_now()
        return inside, allowed_now()

    seen: list[object] = []
    on_a_thread(seen, body)
    assert seen == [(plan.job_cores, frozenset({plan.housekeeping}))]


def test_leave_gives_the_thread_its_cores_back_before_the_block_ends_once(
    plan: CorePlan,
) -> None:
    def body() -> list[frozenset[int]]:
        plan.pin_to_housekeeping()
        seen = []
        with plan.job_affinity() as leave:
            seen.append(allowed_now())
            leave()
            seen.append(allowed_now())
            # Moved by someone else since: neither a second leave nor the block's end moves it.
            cores_module._set_thread_affinity(plan.job_cores)
            leave()
            seen.append(allowed_now())
        seen.append(allowed_now())
        return seen

    seen: list[object] = []
    on_a_thread(seen, body)
    housekeeping = frozenset({plan.housekeeping})
    assert seen == [[plan.job_cores, housekeeping, plan.job_cores, plan.job_cores]]


def test_a_core_that_cannot_be_had_leaves_the_thread_where_it_was(
    plan: CorePlan, caplog: pytest.LogCaptureFixture
) -> None:
    absent = max(os.sched_getaffinity(0)) + 4096  # no such core on any machine this runs on

    def body() -> frozenset[int]:
        plan.pin_to_housekeeping()
        with caplog.at_level(logging.WARNING):
            cores_module._set_thread_affinity({absent})
        return allowed_now()

    seen: list[object] = []
    on_a_thread(seen, body)
    assert seen == [frozenset({plan.housekeeping})]
    assert f"cannot pin thread to cores [{absent}]" in caplog.text


@pytest.fixture
def executor(plan: CorePlan) -> Iterator[ProcessExecutor]:
    made = ProcessExecutor(TEMPLATES, kill_grace=2.0, cores=plan)
    yield made
    made.close()


def test_each_iteration_of_each_job_on_the_slot_starts_on_the_job_cores_only(
    plan: CorePlan, executor: ProcessExecutor, tmp_path: Path
) -> None:
    slot = JobSlot(plan)
    events: queue.SimpleQueue[AgentEvent] = queue.SimpleQueue()
    try:
        tids: queue.SimpleQueue[int] = queue.SimpleQueue()
        slot.run(lambda: tids.put(threading.get_native_id()))
        code = WHERE.format(
            pid=os.getpid(), tid=tids.get(timeout=10), housekeeping=plan.housekeeping
        )
        for _ in range(2):
            run = JobRun(
                claimed_job(
                    {"timeout": 60, "iter": 2, "template": "script", "args": {"code": code}}
                ),
                executor=executor,
                spool=Spool(tmp_path / "spool"),
                post=events.put,
                cores=plan,
                slot=slot,
            )
            run.start()
            assert run.join(30)
            finished = [e for e in drain(events) if isinstance(e, JobFinished)]
            assert len(finished) == 1
            message = finished[0].message
            assert isinstance(message, Completed), message
            for result in message.results:
                assert result.stdout is not None
                job_cores, starter = result.stdout.split()
                assert parse_cpulist(job_cores) == plan.job_cores
                assert parse_cpulist(starter) == {plan.housekeeping}
    finally:
        slot.close()


def drain(events: queue.SimpleQueue[AgentEvent]) -> list[AgentEvent]:
    drained: list[AgentEvent] = []
    while not events.empty():
        drained.append(events.get_nowait())
    return drained


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's libc call")
def test_on_linux_a_thread_is_moved_by_libcs_call_not_the_interpreters() -> None:
    # ctypes releases the interpreter lock around the call; ``os.sched_setaffinity`` keeps it.
    assert cores_module._setter() is not cores_module._os_setter


def test_moves_between_core_sets_each_land_on_their_own_cores(plan: CorePlan) -> None:
    # The masks are built once per core set and kept: a move asked for again, or one to a set
    # after the others, must use that set's mask, not another's.
    assert plan.housekeeping is not None
    sets = [
        frozenset({plan.housekeeping}),
        plan.job_cores,
        frozenset({plan.housekeeping}),
        plan.job_cores | {plan.housekeeping},
        plan.job_cores,
        {plan.housekeeping},  # a plain set, as ``pin_to_housekeeping`` passes
    ]

    def body() -> list[frozenset[int]]:
        landed = []
        for cores in sets:
            cores_module._set_thread_affinity(cores)
            landed.append(allowed_now())
        return landed

    seen: list[object] = []
    on_a_thread(seen, body)
    assert seen == [[frozenset(cores) for cores in sets]]
