"""The Procrastinate side of queue_compare: its app and a no-op task that notes when it starts.

Imported by ``procrastinate worker --app benchmarks.queue_compare_tasks.app`` in the worker
processes, which get the database and the clock directory in the environment. The task writes
``<n> <wall clock ns>`` as its first act, one line per job, to a file of its own process.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TextIO

import procrastinate

DSN = "QUEUE_COMPARE_DSN"
CLOCKS = "QUEUE_COMPARE_CLOCKS"
TASK = "noop"

app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=os.environ.get(DSN, "")))
_clock: list[TextIO] = []


def _clock_file() -> TextIO:
    if not _clock:
        path = Path(os.environ[CLOCKS]) / f"{os.getpid()}.txt"
        _clock.append(path.open("a", buffering=1))  # one write per line: nothing is lost on exit
    return _clock[0]


@app.task(name=TASK)  # type: ignore[untyped-decorator, unused-ignore]  # without the extra
async def noop(n: int) -> None:
    # An async task: Procrastinate's cheapest path (a sync one would run in a thread).
    started = time.time_ns()
    _clock_file().write(f"{n} {started}\n")
