"""What a running job's upkeep costs the server: its heartbeats and its live log's chunks
(docs/explanation/live-logs.md, docs/explanation/architecture.md).

A real server process per engine; ``--connections`` channel connections (asyncio WebSocket
clients in this process) each claim a job of the template ``bench.held`` (an hour's hard
timeout) and send ``running``, then:

heartbeats  Each connection sends ``--beats`` heartbeats as fast as the server answers them
            (``--window`` unanswered at a time). Server CPU (``utime`` + ``stime`` of
            ``/proc/<pid>/stat`` across the run) divided by the heartbeats answered: µs per
            heartbeat, median of ``--repeats`` runs. The idle server's CPU over the same wall
            time is printed beside it: it is counted in the figure, not taken off.
live log    Each connection sends ``--chunks`` log chunks of 100 bytes (all within a second)
            then a heartbeat (answered once the server has taken every chunk), and the run
            waits two seconds for the chunks to be written. Server CPU per chunk; on
            PostgreSQL also, from its own statement log, the transactions that wrote
            ``job_log`` and their statements, per chunk and per job, and the other commits of
            the run (none is due to a chunk: heartbeats only are a control run of the same
            length). The PostgreSQL figures need ``log_line_prefix`` to carry ``[%p]`` (Debian's
            default), read from ``--log``.

``--before SRC`` also runs the server from another checkout's ``src`` (the code before a change),
after this one's on the same engine, and prints after / before ratios of the medians.

    .venv/bin/python -m benchmarks.job_upkeep [--engine sqlite postgresql] [--connections 8]
        [--beats 5000] [--window 1] [--chunks 40] [--repeats 3] [--log PATH] [--before OLD_SRC]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import httpx
import psycopg
import sqlalchemy as sa
import websockets
from psycopg import sql
from tests.databases import fresh_database, with_schema
from tests.harness import Deployment, deploy
from websockets.asyncio.client import ClientConnection

from benchmarks.cpu_time import PROC, TICKS_PER_SECOND, process_cpu_seconds
from benchmarks.round_trips import ADMIN, default_log
from benchmarks.server_env import UNCAPPED
from benchmarks.source_tree import server_source
from benchrunner.protocol import EXTENSIONS_HEADER, OUR_EXTENSIONS

BODY = {"project": "bench", "spec": "small", "template": "bench.held"}
HEARTBEAT = '{"event":"heartbeat"}'
SETTLE = 2.0
"""Seconds a live-log run waits for the chunks to be written (the server writes each second)."""


@dataclass
class Held:
    """A channel connection holding a running job."""

    ws: ClientConnection
    job: str
    offset: int = 0


async def hold(deployment: Deployment, client: httpx.AsyncClient, index: int) -> Held:
    slug, token = deployment.new_runner(f"upkeep-{index}")
    headers = {"Authorization": f"Bearer {token}", EXTENSIONS_HEADER: ", ".join(OUR_EXTENSIONS)}
    url = f"{deployment.server.ws_url}/v0/runners/{slug}/channel"
    ws = await websockets.connect(url, additional_headers=headers, max_queue=None)
    (await client.post("/v0/run", json=BODY)).raise_for_status()
    await ws.send(json.dumps({"event": "ready", "poll_timeout": 10}))
    while (message := json.loads(await ws.recv()))["event"] != "job":
        pass
    await ws.send('{"event":"running"}')
    assert json.loads(await ws.recv())["event"] == "ack"
    return Held(ws, message["uuid"])


async def beat(held: Held, count: int, window: int) -> None:
    """``count`` heartbeats, at most ``window`` unanswered; every answer must be an ``ack``."""
    sent = answered = 0
    while answered < count:
        while sent < count and sent - answered < window:
            await held.ws.send(HEARTBEAT)
            sent += 1
        reply = await held.ws.recv()
        if '"ack"' not in str(reply):
            raise RuntimeError(f"a heartbeat was answered {reply!r}")
        answered += 1


async def chunks(held: Held, count: int) -> None:
    for _ in range(count):
        data = f"line at {held.offset:>12}".ljust(99) + "\n"
        message = {
            "event": "log",
            "job": held.job,
            "stream": "stdout",
            "offset": held.offset,
            "data": data,
        }
        await held.ws.send(json.dumps(message))
        held.offset += len(data)
    await beat(held, 1, 1)


@dataclass
class Statements:
    """Statements of one database in a stretch of PostgreSQL's log, grouped into transactions
    by backend."""

    log_writes: int = 0
    """Transactions that wrote ``job_log``."""
    log_statements: int = 0
    """Their statements, BEGIN and COMMIT included."""
    other_commits: int = 0
    other_statements: int = 0


LINE = re.compile(
    r"\[(\d+)\] \S*@(\S+) LOG:  duration: [0-9.]+ ms  (?:statement|execute [^:]*): (.*)"
)


def read_statements(log: Path, start: int, database: str) -> Statements:
    with log.open("rb") as file:
        file.seek(start)
        text = file.read().decode(errors="replace")
    open_tx: dict[str, list[str]] = {}
    found = Statements()
    for match in LINE.finditer(text):
        pid, db, statement = match.groups()
        if db != database:
            continue
        word = statement.split(None, 1)[0].upper() if statement.strip() else ""
        if word == "BEGIN":
            open_tx[pid] = [statement]
            continue
        tx = open_tx.get(pid)
        if tx is None:  # an autocommit statement: a transaction of its own
            tx = [statement]
        else:
            tx.append(statement)
            if word not in ("COMMIT", "ROLLBACK"):
                continue
            del open_tx[pid]
        if any("INSERT INTO job_log" in s for s in tx):
            found.log_writes += 1
            found.log_statements += len(tx)
        else:
            found.other_statements += len(tx)
            if word != "SELECT":
                found.other_commits += 1
    return found


def log_end(log: Path | None) -> int:
    return log.stat().st_size if log else 0


@dataclass
class Figures:
    beat_us: list[float]
    beat_kernel: list[float]
    beat_wall: list[float]
    idle_us_per_s: list[float]
    chunk_us: list[float]
    control_us: list[float]
    logs: list[Statements]
    control: list[Statements]


def system_seconds(pid: int) -> float:
    """The ``stime`` of ``/proc/<pid>/stat``: CPU seconds spent in the kernel for the process."""
    stat = (PROC / str(pid) / "stat").read_text()
    return int(stat[stat.rindex(")") + 2 :].split()[12]) / TICKS_PER_SECOND


def cpu_over(pid: int) -> Callable[[Awaitable[object]], Awaitable[tuple[float, float, float]]]:
    async def run(work: Awaitable[object]) -> tuple[float, float, float]:
        """CPU seconds of the server (all, and in the kernel) and wall seconds across
        ``work``."""
        cpu, kernel, wall = process_cpu_seconds(pid), system_seconds(pid), time.perf_counter()
        await work
        return (
            process_cpu_seconds(pid) - cpu,
            system_seconds(pid) - kernel,
            time.perf_counter() - wall,
        )

    return run


async def measure(deployment: Deployment, options: argparse.Namespace, log: Path | None) -> Figures:
    assert deployment.server.proc is not None
    across = cpu_over(deployment.server.proc.pid)
    database = str(sa.make_url(deployment.server.db).database)
    headers = {"Authorization": f"Bearer {deployment.server.token}"}
    figures = Figures([], [], [], [], [], [], [], [])
    async with httpx.AsyncClient(base_url=deployment.server.url, headers=headers) as client:
        held = [await hold(deployment, client, i) for i in range(options.connections)]
        await asyncio.gather(*(beat(h, 200, options.window) for h in held))  # warm-up
        for run in range(options.repeats):
            print(f"heartbeats, run {run + 1}", file=sys.stderr, flush=True)
            cpu, kernel, wall = await across(
                asyncio.gather(*(beat(h, options.beats, options.window) for h in held))
            )
            figures.beat_us.append(1e6 * cpu / (options.beats * len(held)))
            figures.beat_kernel.append(kernel / cpu)
            idle, _, idle_wall = await across(asyncio.sleep(min(wall, 5.0)))
            figures.beat_wall.append(wall)
            figures.idle_us_per_s.append(1e6 * idle / idle_wall)

            start = log_end(log)
            cpu, _, _ = await across(
                asyncio.gather(*(chunks(h, options.chunks) for h in held), asyncio.sleep(SETTLE))
            )
            figures.chunk_us.append(1e6 * cpu / (options.chunks * len(held)))
            await asyncio.sleep(0.5)  # the log is written by another process
            if log:
                figures.logs.append(read_statements(log, start, database))
            start = log_end(log)
            cpu, _, _ = await across(
                asyncio.gather(*(beat(h, 1, 1) for h in held), asyncio.sleep(SETTLE))
            )
            figures.control_us.append(1e6 * cpu)
            await asyncio.sleep(0.5)
            if log:
                figures.control.append(read_statements(log, start, database))
        for h in held:
            await h.ws.close()
    return figures


def report(engine: str, options: argparse.Namespace, figures: Figures) -> None:
    med = statistics.median
    n_chunks = options.chunks * options.connections
    print(f"{engine}: {options.connections} connections, median of {options.repeats} runs")
    print(
        f"  heartbeat: {med(figures.beat_us):.1f} µs server CPU each "
        f"(runs {', '.join(f'{v:.1f}' for v in figures.beat_us)}; "
        f"{100 * med(figures.beat_kernel):.0f} % in the kernel; "
        f"{med(figures.beat_wall):.1f} s a run; "
        f"idle server {med(figures.idle_us_per_s):.0f} µs CPU/s)"
    )
    extra = [
        (chunk * n_chunks - control) / n_chunks
        for chunk, control in zip(figures.chunk_us, figures.control_us, strict=True)
    ]
    print(
        f"  live log: {med(figures.chunk_us):.1f} µs server CPU per chunk over the run, "
        f"{med(extra):.1f} µs beyond a control run without chunks"
    )
    if figures.logs and not any(s.other_statements or s.log_writes for s in figures.control):
        print("  live log on PostgreSQL: no statement of the run's database found in the log")
    elif figures.logs:
        writes = [s.log_writes for s in figures.logs]
        statements = [s.log_statements for s in figures.logs]
        print(
            f"  live log on PostgreSQL: {n_chunks} chunks ({options.chunks} a job) written in "
            f"{med(writes):g} transactions of {med(statements):g} statements: "
            f"{med(writes) / n_chunks:.3f} writes and {med(statements) / n_chunks:.3f} "
            f"statements per chunk"
        )
        print(
            f"  other commits: {med([s.other_commits for s in figures.logs]):g} in the run with "
            f"chunks, {med([s.other_commits for s in figures.control]):g} in the control run"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", nargs="+", default=["sqlite", "postgresql"])
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--beats", type=int, default=5000)
    parser.add_argument("--window", type=int, default=1)
    parser.add_argument("--chunks", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--log", type=Path, default=None, help="PostgreSQL's log file")
    parser.add_argument("--before", default=None, help="another checkout's src directory")
    options = parser.parse_args()
    systems = ["after", "before"] if options.before else ["after"]
    for engine in options.engine:
        results: dict[str, Figures] = {}
        for system in systems:
            with server_source(options.before if system == "before" else None):
                results[system] = run_engine(engine, options)
            label = engine if options.before is None else f"{engine} ({system})"
            report(label, options, results[system])
        if options.before:
            med = statistics.median
            after, before = results["after"], results["before"]
            print(
                f"  {engine} after / before: server CPU per heartbeat "
                f"{med(after.beat_us) / med(before.beat_us):.2f}x, per chunk "
                f"{med(after.chunk_us) / med(before.chunk_us):.2f}x"
            )


def run_engine(engine: str, options: argparse.Namespace) -> Figures:
    with tempfile.TemporaryDirectory() as tmp, fresh_database(engine, Path(tmp)) as url:
        log = None
        if engine == "postgresql":
            log = options.log or default_log()
            with_schema(url)  # first: it makes the database anew, which drops a setting made before
            with psycopg.connect(ADMIN, autocommit=True) as conn:
                conn.execute(
                    sql.SQL("ALTER DATABASE {} SET log_min_duration_statement = 0").format(
                        sql.Identifier(str(sa.make_url(url).database))
                    )
                )
        with deploy(Path(tmp), url, heartbeat_timeout=60.0, env=UNCAPPED) as deployment:
            return asyncio.run(measure(deployment, options, log))


if __name__ == "__main__":
    main()
