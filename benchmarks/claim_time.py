"""Claim time against a deep queue: 100, 10,000 and 1,000,000 pending jobs, on each engine.

Fills a fresh database (the server's own migrations) with pending jobs spread over the four
tiers, then times the real claim (``claims.job_claim``: the runner check, the claim query, the
guarded transition and its event) in a transaction that is rolled back, so every sample sees the
same queue. Prints the median and p90 per depth and the query plan of the claim query, which
must walk ``index_job_pending`` rather than scan the table.

    .venv/bin/python -m benchmarks.claim_time [--engines sqlite postgresql]
        [--depths 100 10000 1000000] [--samples 200]
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import statistics
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.expression import ClauseElement, Executable
from tests.databases import fresh_database
from tests.new_reports import new_report_on

from benchrunner.core.states import JobStatus
from benchrunner.core.tiers import Plan
from benchrunner.server.store import accounts, claims, reports, runners
from benchrunner.server.store.engine import make_engine
from benchrunner.server.store.migrate import upgrade
from benchrunner.server.store.tables import job

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
CHUNK = 10_000
PRIORITIES = (300, 200, 100, 0)  # enterprise, team, free, unclaimed: a quarter each
CONFIG = '{"timeout":60,"template":"bench.noop","args":{}}'


class Explain(Executable, ClauseElement):
    """``EXPLAIN`` of a statement, compiled per dialect (SQLAlchemy has no construct for it)."""

    inherit_cache = False

    def __init__(self, statement: sa.Select[Any]) -> None:
        self.statement = statement


@compiles(Explain, "sqlite")
def _explain_sqlite(element: Explain, compiler: SQLCompiler, **kw: Any) -> str:
    return "EXPLAIN QUERY PLAN " + compiler.process(element.statement, **kw)


@compiles(Explain, "postgresql")
def _explain_postgresql(element: Explain, compiler: SQLCompiler, **kw: Any) -> str:
    return "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) " + compiler.process(element.statement, **kw)


def populate(engine: Engine, depth: int) -> int:
    """``depth`` pending jobs over all four tiers; returns the runner id that will claim."""
    with engine.begin() as conn:
        spec = runners.spec_create(
            conn, runners.NewSpec("small", "x86_64", 1, 1 << 30, 1 << 30, False), T0
        )
        runner = runners.runner_create(conn, "bench", "bencher_runner_" + "0" * 64, T0)
        runners.runner_spec_add(conn, runner.id, spec.id)
        leader = accounts.user_get_or_create(conn, "b@x", "b", admin=False, now=T0).id
        org = accounts.organization_create(conn, "org", Plan.TEAM, T0, leader_id=leader)
        project = accounts.project_create(conn, org.id, "p", "public", T0)
        report_id, _ = reports.report_create(
            conn, new_report_on(conn, project.id, "main", "tb", "json", T0)
        )
    for start in range(0, depth, CHUNK):
        rows = [
            {
                "uuid": uuid.uuid4(),
                "report_id": report_id,
                "organization_id": org.id,
                "source_ip": f"10.{(n >> 16) & 255}.{(n >> 8) & 255}.{n & 255}",
                "spec_id": spec.id,
                "config": CONFIG,
                "timeout": 60,
                "priority": PRIORITIES[n % len(PRIORITIES)],
                "status": int(JobStatus.PENDING),
                "kind": "template",
                "created": T0 + dt.timedelta(microseconds=n),
                "modified": T0,
            }
            for n in range(start, min(depth, start + CHUNK))
        ]
        with engine.begin() as conn:
            conn.execute(job.insert(), rows)
    if engine.dialect.name == "postgresql":
        with engine.begin() as conn:  # what autovacuum would have done after the load
            conn.exec_driver_sql("ANALYZE job")
    return int(runner.id)


def time_claims(engine: Engine, runner_id: int, samples: int) -> list[float]:
    timings: list[float] = []
    with engine.connect() as conn:
        for _ in range(samples + 10):
            transaction = conn.begin()
            started = time.perf_counter()
            claimed = claims.job_claim(conn, runner_id, "nonce", T0, "bench")
            elapsed = time.perf_counter() - started
            transaction.rollback()
            assert claimed is not None
            timings.append(elapsed * 1000)
    return timings[10:]  # the first claims warm caches and prepared statements


def plan(conn: Connection, runner_id: int) -> str:
    query = claims._eligible_jobs(False)
    rows = conn.execute(Explain(query), {"runner_id": runner_id, "runner_org": None})
    return "\n".join("    " + " ".join(str(c) for c in row[-1:]) for row in rows)


@contextlib.contextmanager
def database(engine_name: str) -> Iterator[Engine]:
    with (
        tempfile.TemporaryDirectory() as tmp,
        fresh_database(engine_name, Path(tmp)) as url,
    ):
        engine = make_engine(url, writer=True)
        upgrade(engine)
        try:
            yield engine
        finally:
            engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--engines", nargs="+", default=["sqlite", "postgresql"])
    parser.add_argument("--depths", type=int, nargs="+", default=[100, 10_000, 1_000_000])
    parser.add_argument("--samples", type=int, default=200)
    options = parser.parse_args()
    for engine_name in options.engines:
        baseline: float | None = None
        for depth in options.depths:
            with database(engine_name) as engine:
                fill_started = time.perf_counter()
                runner_id = populate(engine, depth)
                fill = time.perf_counter() - fill_started
                timings = time_claims(engine, runner_id, options.samples)
                median = statistics.median(timings)
                baseline = baseline or median
                p90 = statistics.quantiles(timings, n=10)[-1]
                print(
                    f"{engine_name:<10} {depth:>9,} pending: claim median {median:.3f} ms, "
                    f"p90 {p90:.3f} ms ({median / baseline:.2f}x the first depth; "
                    f"filled in {fill:.0f} s)"
                )
                if depth == max(options.depths):
                    with engine.connect() as conn:
                        print(f"  plan of the claim query at {depth:,} pending:")
                        print(plan(conn, runner_id))


if __name__ == "__main__":
    main()
