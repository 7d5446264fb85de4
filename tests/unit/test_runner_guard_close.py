"""Closing the guard (``runner/guard.py``) waits for it on the runner's clock: a guard still
busy stopping what a record names when the wait runs out is killed. A real guard process,
driven by a test clock."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import uuid
from pathlib import Path

from benchrunner.runner import procfs
from benchrunner.runner.guard import Guard
from benchrunner.runner.inflight import InFlight
from tests.harness import wait_until
from tests.thread_clock import ManualThreadClock


def test_a_guard_that_does_not_end_is_killed_when_the_runners_clock_says(tmp_path: Path) -> None:
    clock = ManualThreadClock(start=1000.0)
    in_flight = InFlight(tmp_path / "in-flight")
    hung = tmp_path / "runtime.pid"
    # A container record whose runtime hangs: the guard, stopping it, outlives close's wait.
    runtime = ("sh", "-c", f"echo $$ > {hung}.tmp && mv {hung}.tmp {hung} && exec sleep 600", "rt")
    in_flight.container(uuid.uuid4(), "container", runtime)
    guard = Guard(in_flight.directory, clock)
    closing = threading.Thread(target=guard.close)
    closing.start()
    try:
        wait_until(hung.exists, message="the guard stopping the record's container")
        wait_until(lambda: clock.waiting() == [1030.0], message="close's wait")
        clock.advance(29.0)
        wait_until(lambda: clock.waiting() == [1030.0], message="close waiting on")
        assert closing.is_alive()
        clock.advance(1.0)
        closing.join(30)
        assert not closing.is_alive()
        info = procfs.process(guard.pid)
        assert info is None or info.ended
    finally:
        if hung.exists():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(hung.read_text()), signal.SIGKILL)
