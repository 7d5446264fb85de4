"""The job slot runs work in order on one long-lived thread and survives a failing piece."""

from __future__ import annotations

import threading

import pytest

from benchrunner.runner.cores import CorePlan
from benchrunner.runner.slot import JobSlot


def test_work_runs_in_order_on_one_thread_and_survives_an_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    slot = JobSlot(CorePlan())
    seen: list[tuple[int, str]] = []
    done = threading.Event()

    def record(index: int) -> None:
        seen.append((index, threading.current_thread().name))

    def fail() -> None:
        raise RuntimeError("a bug in one job")

    slot.run(lambda: record(1))
    slot.run(fail)
    slot.run(lambda: record(2))
    slot.run(done.set)
    slot.close()
    assert done.wait(10)
    assert seen == [(1, "job-slot"), (2, "job-slot")]
    assert "a bug in one job" in caplog.text


def test_close_ends_the_thread_after_the_work_handed_in() -> None:
    slot = JobSlot(CorePlan())
    ran = threading.Event()
    slot.run(ran.set)
    slot.close()
    assert ran.wait(10)
    threads = [t for t in threading.enumerate() if t.name == "job-slot"]
    for thread in threads:
        thread.join(10)
    assert not any(t.is_alive() for t in threads)
