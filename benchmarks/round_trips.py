"""Statements per job on PostgreSQL, counted from its own log: each logged statement is one
round trip (psycopg sends parse, bind and execute of a statement together). A count does not
depend on the machine's load, so before and after compare even on a busy machine.

A real server on a fresh database with ``log_min_duration_statement = 0`` set on that database
alone; one channel connection that answers each job at once (``running``, then ``completed``
with a one-metric JSON result). Three phases, each over ``--jobs`` template jobs:

1. **submission**: jobs submitted through ``POST /v0/run`` with no runner connected;
2. **channel**: the runner connects and drains them (``ready`` to ``ack``);
3. **whole job**: with the runner waiting, jobs submitted one at a time, each run to its
   ``ack`` before the next (submission, claim, ``running``, ``completed``, processing).

    .venv/bin/python -m benchmarks.round_trips [--jobs 40] [--log /var/log/postgresql/...]

Debian's PostgreSQL writes its log to ``/var/log/postgresql/postgresql-MAJOR-main.log``, the
default here; its lines carry ``user@database``, which is how this database's are told apart.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import re
import tempfile
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import httpx
import psycopg
import sqlalchemy as sa
import websockets
from psycopg import sql
from tests.databases import fresh_database, with_schema
from tests.harness import Deployment, deploy

from benchmarks.server_env import UNCAPPED
from benchmarks.throughput import answer_job
from benchrunner.protocol import EXTENSIONS_HEADER, OUR_EXTENSIONS

ADMIN = "host=127.0.0.1 user=postgres dbname=postgres"
BODY = {
    "project": "bench",
    "spec": "small",
    "template": "bench.noop",
    "settings": {"adapter": "json"},
}


def default_log() -> Path:
    with psycopg.connect(ADMIN) as conn:
        row = conn.execute("SHOW server_version_num").fetchone()
    assert row is not None
    return Path(f"/var/log/postgresql/postgresql-{int(row[0]) // 10000}-main.log")


async def submit(client: httpx.AsyncClient, count: int) -> None:
    for _ in range(count):
        (await client.post("/v0/run", json=BODY)).raise_for_status()


async def run_jobs(url: str, token: str, count: int, each: Callable[[], Any] | None) -> None:
    """Answer ``count`` jobs on one channel; ``each`` (a coroutine function) is awaited after
    every ``ready`` is sent, to submit the job that ``ready`` waits for."""
    headers = {"Authorization": f"Bearer {token}", EXTENSIONS_HEADER: ", ".join(OUR_EXTENSIONS)}
    async with websockets.connect(url, additional_headers=headers) as ws:
        done = 0
        while done < count:
            await ws.send(json.dumps({"event": "ready", "poll_timeout": 5}))
            if each is not None:
                await each()
            message = json.loads(await ws.recv())
            if message["event"] != "job":
                continue
            await answer_job(ws, message["uuid"])
            done += 1


def count_statements(log: Path, start: int, end: int, database: str) -> collections.Counter[str]:
    """The statements logged for ``database`` between two offsets of the log, by first word."""
    with log.open("rb") as file:
        file.seek(start)
        text = file.read(end - start).decode(errors="replace")
    pattern = re.compile(
        "@"
        + re.escape(database)
        + r" LOG:  duration: [0-9.]+ ms  (?:statement|execute [^:]*): (\S+)"
    )
    return collections.Counter(match.group(1).upper() for match in pattern.finditer(text))


class Phases:
    """Runs phases against one deployment and keeps each one's statement counts."""

    def __init__(self, log: Path, database: str) -> None:
        self.log = log
        self.database = database
        self.counts: dict[str, collections.Counter[str]] = {}

    async def phase(self, name: str, work: Coroutine[Any, Any, None]) -> None:
        start = self.log.stat().st_size
        await work
        await asyncio.sleep(0.5)  # the log is written by another process: let it catch up
        self.counts[name] = count_statements(
            self.log, start, self.log.stat().st_size, self.database
        )


async def measure(deployment: Deployment, phases: Phases, jobs: int) -> None:
    headers = {"Authorization": f"Bearer {deployment.server.token}"}
    async with httpx.AsyncClient(base_url=deployment.server.url, headers=headers) as client:
        await submit(client, 1)  # warm-up: the first submission creates the project
        slug, token = deployment.new_runner("round-trips")
        channel = f"{deployment.server.ws_url}/v0/runners/{slug}/channel"
        await run_jobs(channel, token, 1, None)
        await phases.phase("submission", submit(client, jobs))
        await phases.phase("channel", run_jobs(channel, token, jobs, None))
        await phases.phase("whole job", run_jobs(channel, token, jobs, lambda: submit(client, 1)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=40)
    parser.add_argument("--log", type=Path, default=None, help="PostgreSQL's log file")
    options = parser.parse_args()
    log = options.log or default_log()
    with tempfile.TemporaryDirectory() as tmp, fresh_database("postgresql", Path(tmp)) as url:
        database = str(sa.make_url(url).database)
        with_schema(url)  # first: it makes the database anew, which drops a setting made before
        with psycopg.connect(ADMIN, autocommit=True) as conn:
            conn.execute(
                sql.SQL("ALTER DATABASE {} SET log_min_duration_statement = 0").format(
                    sql.Identifier(database)
                )
            )
        phases = Phases(log, database)
        with deploy(Path(tmp), url, heartbeat_timeout=60.0, env=UNCAPPED) as deployment:
            asyncio.run(measure(deployment, phases, options.jobs))
    print(f"PostgreSQL statements per job ({options.jobs} jobs a phase):")
    for name, kinds in phases.counts.items():
        per_job = {kind: round(n / options.jobs, 2) for kind, n in kinds.most_common()}
        print(f"  {name}: {sum(kinds.values()) / options.jobs:.1f}  {per_job}")


if __name__ == "__main__":
    main()
