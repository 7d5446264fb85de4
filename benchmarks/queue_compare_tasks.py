"""The Procrastinate side of queue_compare: its app and two tasks that note when they start.

Imported by ``procrastinate worker --app benchmarks.queue_compare_tasks.app`` in the worker
processes, which get the database and the clock directory in the environment. Each task writes
``<n> <wall clock ns>``, one line per job, to a file of its own process: ``noop`` (the queue
alone) its own clock as its first act; ``date`` (the whole job) the clock that the ``date`` of
``CLOCK_SCRIPT`` prints at its start, the same processes benchrunner's runner starts per job.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import TextIO

import procrastinate

from benchmarks.clock_job import CLOCK_SCRIPT

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
    written = Path(os.environ[CLOCKS]) / f"job-{n}.json"
    process = await asyncio.create_subprocess_exec(
        "sh", "-c", CLOCK_SCRIPT, "sh", str(written), stdout=asyncio.subprocess.PIPE
    )
    output, _ = await process.communicate()
    started = json.loads(output)["clock"]["started_ns"]["value"]
    _clock_file().write(f"{n} {started}\n")
