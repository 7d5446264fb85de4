"""Pickup timing for the runner's own benchmark (``benchmarks/runner_pickup.py``), off unless
asked: with ``BENCHRUNNER_PICKUP_TRACE=<file>`` in the runner's environment, the runner appends
one line per job to that file,

    <job uuid> <ns when the channel received the job message> <ns when its first process started>
        [<step>=<ns> ...]

all ``time.time_ns()`` (CLOCK_REALTIME), so a job process can compare its own clock with them.
The steps are time stamps along the way in between (``step``), so that the benchmark can say
where the time goes. Unset, each hook costs one test of a module constant; nothing is recorded
or kept.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from pathlib import Path

PICKUP_TRACE_ENV = "BENCHRUNNER_PICKUP_TRACE"

_configured = os.environ.get(PICKUP_TRACE_ENV)
TRACE_FILE = Path(_configured) if _configured else None
ENABLED = TRACE_FILE is not None

_lock = threading.Lock()
_received: dict[uuid.UUID, int] = {}
_steps: list[tuple[str, int]] = []


def now() -> int:
    """The receipt stamp to pass to ``job_received``; 0 (and no clock read) when disabled."""
    return time.time_ns() if ENABLED else 0


def job_received(job: uuid.UUID, received_ns: int) -> None:
    if not ENABLED:
        return
    parsed_ns = time.time_ns()
    with _lock:
        _received[job] = received_ns
        _steps[:] = [("parsed", parsed_ns)]


def step(label: str) -> None:
    """Stamp ``label`` (one word) on the way of the job received last, until its first
    process started."""
    if not ENABLED:
        return
    stamp = time.time_ns()
    with _lock:
        if _received:
            _steps.append((label, stamp))


def job_started(job: uuid.UUID, started_ns: int) -> None:
    """The job's first process started at ``started_ns`` (from ``now()``): write its line, for
    the first call per job only."""
    if TRACE_FILE is None:
        return
    with _lock:
        received_ns = _received.pop(job, None)
        steps = "".join(f" {label}={stamp}" for label, stamp in _steps)
        _steps.clear()
    if received_ns is None:
        return
    with TRACE_FILE.open("a", encoding="ascii") as trace:
        trace.write(f"{job} {received_ns} {started_ns}{steps}\n")
