"""A report's judgment is written in several short transactions (docs/decisions/processing.md):
a server killed between them loses nothing, as the report keeps its mark until the last, and
is judged again when the server starts."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import sqlalchemy as sa

from benchrunner.server.store.engine import Database
from benchrunner.server.store.tables import alert, boundary, metric, report, threshold
from tests.harness import deploy, wait_until
from tests.system.project_api import Api, latency

BENCHMARKS = 200
TEN_PERCENT = {"test": "percentage", "upper_boundary": 0.1, "min_sample_size": 2}


def _judged(db: Database) -> list[Any]:
    """Each report with its metrics, boundaries, alerts and whether it is marked as judged."""
    on_metric = boundary.c.metric_id == metric.c.id
    statement = (
        sa.select(
            report.c.id,
            report.c.judging.is_not(None).label("judging"),
            sa.func.count(sa.distinct(metric.c.id)).label("metrics"),
            sa.func.count(sa.distinct(boundary.c.id)).label("boundaries"),
            sa.func.count(sa.distinct(alert.c.id)).label("alerts"),
        )
        .join(metric, metric.c.report_id == report.c.id)
        .outerjoin(boundary, on_metric)
        .outerjoin(alert, alert.c.boundary_id == boundary.c.id)
        .group_by(report.c.id)
        .order_by(report.c.id)
    )
    with db.read_engine.connect() as conn:
        return list(conn.execute(statement))


@contextmanager
def _writer_held(db: Database) -> Iterator[None]:
    """Stop the server's next judgment write: SQLite's single writer taken, or on PostgreSQL
    the thresholds' rows, which each judgment write locks first."""
    with db.write_engine.connect() as conn, conn.begin():
        if not db.sqlite:
            conn.execute(sa.select(threshold.c.id).with_for_update()).all()
        yield


def test_a_server_killed_between_judgment_writes_judges_the_report_again_at_restart(
    tmp_path: Path, database_url: str
) -> None:
    env = {"BENCHRUNNER_JUDGMENT_WRITE_ROWS": "1"}  # a write a boundary: hundreds of them
    with deploy(tmp_path, database_url, env=env) as deployment:
        api = Api(deployment, "bench")
        steady = latency(**{f"b{k}": 100.0 for k in range(BENCHMARKS)})
        api.run(steady, thresholds={"models": {"latency": TEN_PERCENT}})
        api.run(steady)
        regressed = {f"b{k}": 150.0 if k % 10 == 0 else 100.0 for k in range(BENCHMARKS)}
        failed: list[BaseException] = []

        def run() -> None:  # its request dies with the server
            try:
                api.run_raw(latency(**regressed))
            except httpx.HTTPError as exc:
                failed.append(exc)

        db = Database(database_url)
        try:
            request = threading.Thread(target=run)
            request.start()
            newest = wait_until(
                lambda: [r for r in _judged(db) if r.judging and r.boundaries],
                timeout=60,
                interval=0.002,
                message="the judgment's first writes",
            )[-1]
            with _writer_held(db):
                deployment.server.kill(signal.SIGKILL)
            request.join(timeout=30)
            [left] = [r for r in _judged(db) if r.id == newest.id]
            assert left.judging and 0 < left.boundaries < BENCHMARKS, left
            assert failed, "the request was answered: the judgment was not interrupted"

            deployment.server.start()
            judged = wait_until(
                lambda: [r for r in _judged(db) if r.id == newest.id and not r.judging],
                timeout=60,
                message="the report judged again",
            )
        finally:
            db.close()
        assert (judged[0].boundaries, judged[0].alerts) == (BENCHMARKS, BENCHMARKS // 10)
        answer = api.get(f"/reports/{_uuid(database_url, newest.id)}")
        assert len(answer["alerts"]) == BENCHMARKS // 10


def test_a_direct_run_whose_judgment_fails_is_answered_and_judged_at_the_next_start(
    tmp_path: Path, database_url: str
) -> None:
    """Every boundary refused (a trigger of the database's own): the run is answered with its
    report, unjudged, which keeps its mark; the server's next start judges it."""
    with deploy(tmp_path, database_url) as deployment:
        api = Api(deployment, "bench")
        steady = latency(**{f"b{k}": 100.0 for k in range(BENCHMARKS)})
        api.run(steady, thresholds={"models": {"latency": TEN_PERCENT}})
        api.run(steady)
        regressed = {f"b{k}": 150.0 if k % 10 == 0 else 100.0 for k in range(BENCHMARKS)}
        db = Database(database_url)
        try:
            with db.write_engine.begin() as conn:
                _refused(conn)
            answered = api.run(latency(**regressed))
            newest = _judged(db)[-1]
            assert newest.judging and (newest.boundaries, newest.alerts) == (0, 0), newest
            assert answered["alerts"] == []
            with db.write_engine.begin() as conn:
                conn.execute(
                    sa.text("DROP TRIGGER refused" + ("" if db.sqlite else " ON boundary"))
                )
            deployment.server.kill(signal.SIGKILL)
            deployment.server.start()
            judged = wait_until(
                lambda: [r for r in _judged(db) if r.id == newest.id and not r.judging],
                timeout=60,
                message="the report judged at the next start",
            )
        finally:
            db.close()
        assert (judged[0].boundaries, judged[0].alerts) == (BENCHMARKS, BENCHMARKS // 10)


def _refused(conn: sa.Connection) -> None:
    """Every boundary insert fails, as a write of a bug would."""
    if conn.dialect.name == "sqlite":
        conn.execute(
            sa.text(
                "CREATE TRIGGER refused BEFORE INSERT ON boundary "
                "BEGIN SELECT RAISE(ABORT, 'refused'); END"
            )
        )
        return
    conn.execute(
        sa.text(
            "CREATE FUNCTION refused() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN RAISE EXCEPTION 'refused'; END $$"
        )
    )
    conn.execute(
        sa.text(
            "CREATE TRIGGER refused BEFORE INSERT ON boundary "
            "FOR EACH ROW EXECUTE FUNCTION refused()"
        )
    )


def _uuid(database_url: str, report_id: int) -> str:
    db = Database(database_url)
    try:
        with db.read_engine.connect() as conn:
            found = conn.execute(sa.select(report.c.uuid).where(report.c.id == report_id))
            return str(found.scalar_one())
    finally:
        db.close()
