"""The Procrastinate side of queue_compare: its app and two tasks that note when they start.

Imported by ``procrastinate worker --app benchmarks.queue_compare_tasks.app`` in the worker
processes, which get the database and the clock directory in the environment. Each task writes
``<n> <wall clock ns>``, one line per job, to a file of its own process: ``noop`` (the queue
alone) its own clock as its first act; ``date`` (the whole job, as benchrunner's runner runs
it) the clock that a ``date`` process it starts prints at its start.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import TextIO

import procrastinate

DSN = "QUEUE_COMPARE_DSN"
CLOCKS = "QUEUE_COMPARE_CLOCKS"
TASKS = {"queue": "noop", "job": "date"}

app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=os.environ.get(DSN, "")))
_clock: list[TextIO] = []


def _clock_file() -> TextIO:
    if not _clock:
        path = Path(os.environ[CLOCKS]) / f"{os.getpid()}.txt"
        _clock.append(path.open("a", buffering=1))  # one write per line: nothing is lost on exit
    return _clock[0]


@app.task(name=TASKS["queue"])  # type: ignore[untyped-decorator, unused-ignore]  # without the extra
async def noop(n: int) -> None:
    # An async task: Procrastinate's cheapest path (a sync one would run in a thread).
    started = time.time_ns()
    _clock_file().write(f"{n} {started}\n")


@app.task(name=TASKS["job"])  # type: ignore[untyped-decorator, unused-ignore]  # without the extra
async def date(n: int) -> None:
    process = await asyncio.create_subprocess_exec("date", "+%s%N", stdout=asyncio.subprocess.PIPE)
    output, _ = await process.communicate()
    _clock_file().write(f"{n} {int(output)}\n")
