"""Statements per job on PostgreSQL, counted from its own log: each logged statement is one
round trip (psycopg sends parse, bind and execute of a statement together). A count does not
depend on the machine's load, so before and after compare even on a busy machine.

A real server on a fresh database with ``log_min_duration_statement = 0`` set on that database
alone; one channel connection that answers each job at once (``running``, then ``completed``
with a one-metric JSON result). Three phases, each over ``--jobs`` template jobs:

1. **submission**: jobs submitted through ``POST /v0/run`` with no runner connected;
2. **channel**: the runner connects and drains them (``ready`` to ``ack``);
3. **whole job**: jobs submitted one at a time, each claimed by the ``ready`` the runner
   sends after the submission and run to its ``ack`` before the next (submission, claim,
   ``running``, ``completed``, processing). Until ``ebcb304`` the runner sent ``ready`` first,
   and about one claim in two found nothing (those counts are in RESULTS.md's git history).
4. **pickup**: the path of pickup alone: the runner waits (``ready`` sent, the server counts it
   waiting), a job is submitted, and only the statements from the submit call until the runner
   has the job are counted (the log read before and after each, the runner's answers left out).

    .venv/bin/python -m benchmarks.round_trips [--jobs 40] [--log /var/log/postgresql/...]
        [--log-line]

``--log-line``: the runner sends one ``log`` chunk (a line of stdout) before each ``completed``,
as a real runner does for a job that prints a line (``queue_compare``'s ``date``): the whole job
then also counts the statements that store a job's live log.

After the counts by first word it prints, per phase, each distinct statement text (whitespace
collapsed, cut to ``--width`` characters) with how many times a job sent it.

Debian's PostgreSQL writes its log to ``/var/log/postgresql/postgresql-MAJOR-main.log``, the
default here; its lines carry ``user@database``, which is how this database's are told apart.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import itertools
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


async def run_jobs(
    url: str,
    token: str,
    count: int,
    each: Callable[[], Any] | None,
    log_line: str | None = None,
) -> None:
    """Answer ``count`` jobs on one channel; ``each`` (a coroutine function) is awaited before
    every ``ready`` is sent, to submit the job that ``ready`` then claims: a runner that sent
    ``ready`` first would also count a claim that finds nothing for each job, which a busy
    runner, whose ``ready`` follows its last ``ack`` with jobs queued, does not make."""
    headers = {"Authorization": f"Bearer {token}", EXTENSIONS_HEADER: ", ".join(OUR_EXTENSIONS)}
    async with websockets.connect(url, additional_headers=headers) as ws:
        done = 0
        while done < count:
            if each is not None:
                await each()
            await ws.send(json.dumps({"event": "ready", "poll_timeout": 5}))
            message = json.loads(await ws.recv())
            if message["event"] != "job":
                continue
            await answer_job(ws, message["uuid"], log_line)
            done += 1


ENTRY = re.compile(r"^\d{4}-\d\d-\d\d ", re.MULTILINE)
"""Where a log entry begins: its timestamp at the start of a line (a statement's own lines
continue it, indented)."""


def logged_statements(log: Path, start: int, end: int, database: str) -> list[str]:
    """The statements logged for ``database`` between two offsets of the log, whitespace
    collapsed, in the order they were logged."""
    with log.open("rb") as file:
        file.seek(start)
        text = file.read(end - start).decode(errors="replace")
    statement = re.compile(
        "@"
        + re.escape(database)
        + r" LOG:  duration: [0-9.]+ ms  (?:statement|execute [^:]*): (.*)",
        re.DOTALL,
    )
    found = []
    starts = [match.start() for match in ENTRY.finditer(text)] + [len(text)]
    for begin, stop in itertools.pairwise(starts):
        match = statement.search(text, begin, stop)
        if match is not None:
            found.append(" ".join(match.group(1).split()))
    return found


def by_first_word(statements: list[str]) -> collections.Counter[str]:
    return collections.Counter(text.split(" ", 1)[0].upper() for text in statements)


def shown(text: str, width: int) -> str:
    """A statement's text cut to ``width`` characters, its parameter numbers kept."""
    return text if len(text) <= width else text[: width - 1] + "…"


class Phases:
    """Runs phases against one deployment and keeps each one's statement counts."""

    def __init__(self, log: Path, database: str) -> None:
        self.log = log
        self.database = database
        self.statements: dict[str, list[str]] = {}
        self.jobs: dict[str, int] = {}
        """Jobs a phase ran, where not ``--jobs``."""

    async def phase(self, name: str, work: Coroutine[Any, Any, None]) -> None:
        start = self.log.stat().st_size
        await work
        await asyncio.sleep(0.5)  # the log is written by another process: let it catch up
        self.statements[name] = logged_statements(
            self.log, start, self.log.stat().st_size, self.database
        )


async def waiting(client: httpx.AsyncClient) -> None:
    """Return once the server counts one runner waiting."""
    for _ in range(2000):
        if (await client.get("/v0/server/health")).json()["waiting_runners"] == 1:
            return
        await asyncio.sleep(0.005)
    raise SystemExit("the runner never waited")


async def pickups(
    client: httpx.AsyncClient,
    url: str,
    token: str,
    count: int,
    phases: Phases,
    log_line: str | None = None,
) -> None:
    """Phase ``pickup``: per job, the statements from the submit call of a job whose runner
    waits until that runner has it."""
    headers = {"Authorization": f"Bearer {token}", EXTENSIONS_HEADER: ", ".join(OUR_EXTENSIONS)}
    found: list[str] = []
    async with websockets.connect(url, additional_headers=headers) as ws:
        for _ in range(count):
            await ws.send(json.dumps({"event": "ready", "poll_timeout": 30}))
            await waiting(client)
            await asyncio.sleep(0.3)  # statements before the submission reach the log
            start = phases.log.stat().st_size
            await submit(client, 1)
            message = json.loads(await ws.recv())
            await asyncio.sleep(0.3)
            found += logged_statements(
                phases.log, start, phases.log.stat().st_size, phases.database
            )
            await answer_job(ws, message["uuid"], log_line)
    phases.statements["pickup"] = found
    phases.jobs["pickup"] = count


async def measure(
    deployment: Deployment, phases: Phases, jobs: int, log_line: str | None = None
) -> None:
    headers = {"Authorization": f"Bearer {deployment.server.token}"}
    async with httpx.AsyncClient(base_url=deployment.server.url, headers=headers) as client:
        await submit(client, 1)  # warm-up: the first submission creates the project
        slug, token = deployment.new_runner("round-trips")
        channel = f"{deployment.server.ws_url}/v0/runners/{slug}/channel"
        await run_jobs(channel, token, 1, None)
        await phases.phase("submission", submit(client, jobs))
        await phases.phase("channel", run_jobs(channel, token, jobs, None, log_line))
        whole = run_jobs(channel, token, jobs, lambda: submit(client, 1), log_line)
        await phases.phase("whole job", whole)
        await pickups(client, channel, token, min(jobs, 10), phases, log_line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=40)
    parser.add_argument("--log", type=Path, default=None, help="PostgreSQL's log file")
    parser.add_argument(
        "--no-texts", dest="texts", action="store_false", help="counts only, no statement texts"
    )
    parser.add_argument("--width", type=int, default=160, help="characters of each text shown")
    parser.add_argument(
        "--log-line",
        action="store_true",
        help="the runner sends a line of stdout (a log chunk) before each completed",
    )
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
            line = "Sun Nov 29 20:00:00 UTC 2026\n" if options.log_line else None
            asyncio.run(measure(deployment, phases, options.jobs, line))
    print(f"PostgreSQL statements per job ({options.jobs} jobs a phase unless said):")
    for name, statements in phases.statements.items():
        jobs = phases.jobs.get(name, options.jobs)
        kinds = by_first_word(statements)
        per_job = {kind: round(n / jobs, 2) for kind, n in kinds.most_common()}
        over = "" if jobs == options.jobs else f" ({jobs} jobs)"
        print(f"  {name}{over}: {len(statements) / jobs:.1f}  {per_job}")
    if options.texts:
        for name, statements in phases.statements.items():
            print(f"\n{name}: each distinct statement, per job")
            jobs = phases.jobs.get(name, options.jobs)
            for text, n in collections.Counter(statements).most_common():
                print(f"  {n / jobs:5.2f}  {shown(text, options.width)}")


if __name__ == "__main__":
    main()
