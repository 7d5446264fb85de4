"""What one unit of database work costs the server's process, apart from its statements.

Every database access of the server is a unit run through ``Database.read`` or
``Database.write`` from the event loop: on SQLite on the loop itself, on PostgreSQL on an
executor thread (a thread hop there and back). This runs three kinds of unit through a real
``Database`` on a fresh database of each engine and prints the process's CPU time and the wall
time per unit, medians over the repeats:

- ``hop``: a unit that runs no statement (what the hop and the transaction around it cost);
- ``read``: one single-row ``SELECT`` in a read unit;
- ``direct_read``: the same ``SELECT`` run as the hot paths run theirs (``store.direct.Direct``);
- ``write``: one single-row ``UPDATE`` in a write unit (a transaction with its commit);
- ``write_each``: the same through ``Database.write_each`` (autocommit on PostgreSQL), when the
  code measured has it;
- PostgreSQL only, the driver's floor: the same ``SELECT`` as a prepared statement on a bare
  psycopg connection in autocommit, blocking on the event loop's thread (``psycopg``) and
  awaited on an ``AsyncConnection`` (``psycopg_async``); no SQLAlchemy, no thread hop;
  and a bare thread hop, ``run_in_executor`` of a function that does nothing (``thread_hop``).

``--before SRC`` runs the same measurement with benchrunner imported from another checkout's
``src`` (a ``git worktree`` of the code before a change), alternating with this one, and prints
after / before ratios. Each measurement runs in a fresh child process.

    .venv/bin/python -m benchmarks.db_units [--engines sqlite postgresql] [--units 3000]
        [--repeat 5] [--before OLD_SRC]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psycopg
import sqlalchemy as sa
from sqlalchemy.engine import Connection
from tests.databases import fresh_database

from benchrunner.server.store.direct import Direct
from benchrunner.server.store.engine import Database

_PROBE = sa.table("probe", sa.column("id", sa.Integer), sa.column("n", sa.Integer))
_DIRECT_SELECT = Direct(sa.select(_PROBE.c.n).where(_PROBE.c.id == sa.bindparam("id")))

KINDS = (
    "hop",
    "read",
    "direct_read",
    "write",
    "write_each",
    "psycopg",
    "psycopg_async",
    "thread_hop",
)


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def _measure(url: str, units: int) -> dict[str, tuple[float, float]]:
    """µs of CPU and of wall time per unit, per kind, in this process."""

    def nothing(_conn: Connection) -> None:
        return None

    def select(conn: Connection) -> int:
        return int(conn.execute(sa.text("SELECT n FROM probe WHERE id = 1")).scalar_one())

    def direct_select(conn: Connection) -> int:
        value = _DIRECT_SELECT.scalar(conn, {"id": 1})
        assert value is not None
        return int(value)

    def update(conn: Connection) -> None:
        conn.execute(sa.text("UPDATE probe SET n = n + 1 WHERE id = 1"))

    async with contextlib.AsyncExitStack() as stack:
        db = Database(url)
        stack.callback(db.close)
        db.write_sync(lambda conn: conn.execute(sa.text("CREATE TABLE probe (id INT, n INT)")))
        db.write_sync(lambda conn: conn.execute(sa.text("INSERT INTO probe VALUES (1, 0)")))
        runs: dict[str, Callable[[], Any]] = {
            "hop": lambda: db.read(nothing),
            "read": lambda: db.read(select),
            "direct_read": lambda: db.read(direct_select),
            "write": lambda: db.write(update),
        }
        if hasattr(db, "write_each"):
            runs["write_each"] = lambda: db.write_each(update)
        if not db.sqlite:
            runs.update(await stack.enter_async_context(_driver_floor(url)))
        figures = {}
        for kind, run in runs.items():
            for _ in range(units // 10):  # warm: connections opened, statements cached
                await run()
            cpu, wall = _cpu(), time.perf_counter()
            for _ in range(units):
                await run()
            figures[kind] = (
                1e6 * (_cpu() - cpu) / units,
                1e6 * (time.perf_counter() - wall) / units,
            )
        return figures


@contextlib.asynccontextmanager
async def _driver_floor(url: str) -> AsyncIterator[dict[str, Callable[[], Any]]]:
    conninfo = sa.make_url(url).set(drivername="postgresql").render_as_string(False)
    query = "SELECT n FROM probe WHERE id = 1"
    with (
        psycopg.connect(conninfo, autocommit=True) as blocking,
        ThreadPoolExecutor(1) as hops,
    ):
        async with await psycopg.AsyncConnection.connect(conninfo, autocommit=True) as awaited:

            async def inline() -> Any:
                return blocking.execute(query, prepare=True).fetchone()

            async def asynchronous() -> Any:
                return await (await awaited.execute(query, prepare=True)).fetchone()

            async def thread_hop() -> Any:
                return await asyncio.get_running_loop().run_in_executor(hops, int)

            yield {"psycopg": inline, "psycopg_async": asynchronous, "thread_hop": thread_hop}


def _child(engine: str, units: int, src: str | None) -> dict[str, tuple[float, float]]:
    """One measurement in a fresh process importing benchrunner from ``src`` (None: this one)."""
    env = dict(os.environ) if src is None else {**os.environ, "PYTHONPATH": src}
    with tempfile.TemporaryDirectory() as tmp, fresh_database(engine, Path(tmp)) as url:
        done = subprocess.run(
            [sys.executable, "-m", "benchmarks.db_units", "--child", url, "--units", str(units)],
            check=True,
            capture_output=True,
            text=True,
            env=env,
        )
    return {kind: (cpu, wall) for kind, (cpu, wall) in json.loads(done.stdout).items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engines", nargs="+", default=["sqlite", "postgresql"])
    parser.add_argument("--units", type=int, default=3000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--before", help="another checkout's src directory")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        print(json.dumps(asyncio.run(_measure(options.child, options.units))))
        return
    sources: dict[str, str | None] = {"after": None}
    if options.before:
        sources["before"] = str(Path(options.before).resolve())
    for engine in options.engines:
        samples: dict[str, list[dict[str, tuple[float, float]]]] = {name: [] for name in sources}
        for _ in range(options.repeat):
            for name, src in sources.items():  # alternating, so both see the same machine
                samples[name].append(_child(engine, options.units, src))
        print(f"{engine}: µs per unit, medians of {options.repeat} ({options.units} units each)")
        medians: dict[str, dict[str, tuple[float, float]]] = {}
        for name, runs in samples.items():
            medians[name] = {
                kind: (
                    statistics.median(run[kind][0] for run in runs),
                    statistics.median(run[kind][1] for run in runs),
                )
                for kind in KINDS
                if kind in runs[0]
            }
            row = "  ".join(
                f"{kind} cpu {cpu:6.1f} wall {wall:6.1f}"
                for kind, (cpu, wall) in medians[name].items()
            )
            print(f"  {name:6} {row}")
        if "before" in medians:
            ratios = "  ".join(
                f"{kind} cpu {medians['after'][kind][0] / medians['before'][kind][0]:.2f}x"
                for kind in KINDS
                if kind in medians["before"]
            )
            print(f"  after / before: {ratios}")


if __name__ == "__main__":
    main()
