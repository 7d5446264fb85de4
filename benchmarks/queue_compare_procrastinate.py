"""The Procrastinate side of queue_compare: real ``procrastinate worker`` processes.

Each run gets a fresh PostgreSQL database with Procrastinate's schema applied. The workers
(concurrency 1 each, LISTEN/NOTIFY on, the CLI's defaults otherwise) run the async no-op task of
``benchmarks.queue_compare_tasks``, which writes its start clock to a file; the client defers
jobs by task name through an app of its own, one ``defer_async`` after another.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import procrastinate
import psycopg
import sqlalchemy as sa
from procrastinate.schema import SchemaManager
from tests.databases import postgres_database
from tests.harness import REPO

from benchmarks.cpu_time import backends_cpu, process_cpu_seconds
from benchmarks.queue_compare_tasks import CLOCKS, DSN, TASKS
from benchmarks.queue_figures import Figures, percentile

IDLE_PAUSE = 0.05
"""Between pickup samples, after the previous job is done: every worker is back waiting."""


def clocks(directory: Path) -> dict[int, int]:
    """Job number -> the wall clock (ns) at which its task started, from every worker's file."""
    found: dict[int, int] = {}
    for path in directory.glob("*.txt"):
        for line in path.read_text().splitlines():
            n, started = line.split()
            found[int(n)] = int(started)
    return found


@contextlib.contextmanager
def worker_processes(count: int, dsn: str, directory: Path) -> Iterator[list[int]]:
    """``count`` worker processes; yields their pids, stops them with SIGTERM afterwards."""
    env = {**os.environ, DSN: dsn, CLOCKS: str(directory)}
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for i in range(count):
            with (directory.parent / f"worker-{i}.log").open("wb") as log:
                procs.append(
                    subprocess.Popen(
                        [
                            sys.executable,
                            "-m",
                            "procrastinate",
                            "--app",
                            "benchmarks.queue_compare_tasks.app",
                            "worker",
                            "--name",
                            f"worker-{i}",
                            "--concurrency",
                            "1",
                        ],
                        cwd=REPO,
                        env=env,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        stdin=subprocess.DEVNULL,
                    )
                )
        yield [p.pid for p in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=30)


async def _wait(
    conn: psycopg.AsyncConnection[tuple[int]], query: str, arg: int, deadline: float, poll: float
) -> None:
    """Poll until ``query`` (a count) returns 0; fail at ``deadline`` (monotonic)."""
    while True:
        row = await (await conn.execute(query, (arg,))).fetchone()
        if row is not None and row[0] == 0:
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"Procrastinate jobs not done in time ({query}, {arg})")
        await asyncio.sleep(poll)


NOT_DONE_ONE = "SELECT count(*) FROM procrastinate_jobs WHERE id = %s AND status <> 'succeeded'"
NOT_DONE_ALL = "SELECT count(*) FROM procrastinate_jobs WHERE id >= %s AND status <> 'succeeded'"


async def _phases(
    task: str,
    dsn: str,
    directory: Path,
    counts: tuple[int, int, int],
    measure: contextlib.AbstractContextManager[None],
) -> tuple[dict[int, int], float]:
    """The pickup phase, then the throughput phase (inside ``measure``); returns the pickup
    samples' client clocks and the throughput phase's seconds."""
    jobs, samples, warmup = counts
    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=dsn))
    deferrer = app.configure_task(task)
    enqueued: dict[int, int] = {}
    async with app.open_async(), await psycopg.AsyncConnection.connect(dsn, autocommit=True) as db:
        for index in range(warmup + samples):
            before = time.time_ns()
            job_id = await deferrer.defer_async(n=index)
            if index >= warmup:
                enqueued[index] = before
            deadline = time.monotonic() + (120 if index == 0 else 60)
            # Until the task has started only its clock file is watched, so that no query
            # competes with the pickup being measured.
            while index not in clocks(directory):
                if time.monotonic() > deadline:
                    raise SystemExit(f"Procrastinate job {index} did not start in time")
                await asyncio.sleep(0.002)
            await _wait(db, NOT_DONE_ONE, job_id, deadline, 0.01)
            await asyncio.sleep(IDLE_PAUSE)
        first = warmup + samples
        with measure:
            started = time.perf_counter()
            first_id = await deferrer.defer_async(n=first)
            for n in range(first + 1, first + jobs):
                await deferrer.defer_async(n=n)
            deadline = time.monotonic() + max(600.0, jobs / 2)
            await _wait(db, NOT_DONE_ALL, first_id, deadline, 0.1)
            elapsed = time.perf_counter() - started
    return enqueued, elapsed


@contextlib.contextmanager
def _cpu(pids: list[int], database: str, into: list[float]) -> Iterator[None]:
    before = sum(process_cpu_seconds(pid) for pid in pids)
    with backends_cpu(database, every_process=True) as database_cpu:
        yield
    into.append(sum(process_cpu_seconds(pid) for pid in pids) - before)
    into.append(database_cpu[0])


def run(workers: int, jobs: int, samples: int, warmup: int, mode: str = "job") -> Figures:
    """One measurement: a fresh database, ``workers`` worker processes; the pickup phase,
    then ``jobs`` jobs deferred while the workers run."""
    with tempfile.TemporaryDirectory(prefix="queue-compare-") as tmp, postgres_database() as url:
        database = sa.make_url(url).database
        assert database is not None
        dsn = url.replace("postgresql+psycopg://", "postgresql://")
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(SchemaManager.get_schema())  # as `procrastinate schema --apply`
        directory = Path(tmp) / "clocks"
        directory.mkdir()
        with worker_processes(workers, dsn, directory) as pids:
            cpu: list[float] = []
            enqueued, elapsed = asyncio.run(
                _phases(
                    TASKS[mode], dsn, directory, (jobs, samples, warmup), _cpu(pids, database, cpu)
                )
            )
        started = clocks(directory)
        first = warmup + samples
        lost = [n for n in range(first, first + jobs) if n not in started]
        if lost:
            raise SystemExit(f"{len(lost)} of {jobs} Procrastinate jobs never started")
        pickup = [(started[n] - at) / 1e6 for n, at in enqueued.items()]
        worker_cpu, database_cpu = cpu
        return Figures(
            system="procrastinate",
            engine="postgresql",
            workers=workers,
            jobs=jobs,
            throughput=jobs / elapsed,
            pickup_p50=percentile(pickup, 0.5),
            pickup_p90=percentile(pickup, 0.9),
            server_cpu=None,
            database_cpu=database_cpu * 1000 / jobs,
            worker_cpu=worker_cpu * 1000 / jobs,
        )
