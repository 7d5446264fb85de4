"""The status predicates of the job table's partial indexes (tables.py) select exactly the
states they stand for, and the migrated indexes say them as ranges (migration 0020); SQLite's
planner, without statistics (a new store's until its first ``ANALYZE`` over rows), answers the
reads made on every job through the indexes made for them (migration 0021)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from benchrunner.core.states import IN_FLIGHT, JobStatus
from benchrunner.server.store import accounts, jobs
from benchrunner.server.store.engine import Database
from benchrunner.server.store.migrate import upgrade
from benchrunner.server.store.tables import in_flight, job, pending

LEFT_PROCESSING = {JobStatus.FAILED, JobStatus.CANCELED, JobStatus.PROCESSED}


def _holds(db: Database, predicate: sa.ColumnElement[bool] | sa.TextClause) -> bool:
    return bool(db.write_sync(lambda conn: conn.execute(sa.select(predicate)).scalar_one()))


@pytest.mark.parametrize("status", list(JobStatus))
def test_each_predicate_selects_its_states(migrated_db: Database, status: JobStatus) -> None:
    value = sa.literal(int(status))
    assert _holds(migrated_db, in_flight(value)) == (status in IN_FLIGHT)
    assert _holds(migrated_db, pending(value)) == (status == JobStatus.PENDING)
    kept = value >= 4  # index_job_outputs_kept's status term
    assert _holds(migrated_db, kept) == (status in LEFT_PROCESSING)


def test_no_partial_index_of_job_lists_statuses(migrated_db: Database) -> None:
    names = {"index_job_in_flight", "index_job_org_in_flight", "index_job_source_ip_in_flight"}
    engine = migrated_db.write_engine
    query = (
        "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'job'"
        if engine.dialect.name == "postgresql"
        else "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'job'"
    )
    with engine.connect() as conn:
        indexes = {row[0]: str(row[1]) for row in conn.exec_driver_sql(query)}
    assert names | {"index_job_outputs_kept"} <= set(indexes)
    assert not [name for name, sql in indexes.items() if " IN (" in sql.upper()], indexes


@pytest.fixture
def sqlite_db(tmp_path: Path) -> Iterator[Database]:
    """A migrated SQLite store: the planner test is about SQLite's planner alone."""
    database = Database(f"sqlite:///{tmp_path / 'plan.db'}", read_threads=1)
    upgrade(database.write_engine)
    yield database
    database.close()


def _plan(db: Database, query: sa.ClauseElement) -> str:
    """SQLite's plan of ``query``, its parameters written in."""
    sql = str(query.compile(db.write_engine, compile_kwargs={"literal_binds": True}))
    with db.write_engine.connect() as conn:
        return " ".join(str(row[-1]) for row in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}"))


def test_sqlite_finds_in_flight_jobs_through_the_partial_index(sqlite_db: Database) -> None:
    query = sa.select(job.c.id).where(in_flight(job.c.status), job.c.organization_id == 1)
    plan = _plan(sqlite_db, query)
    assert "index_job_org_in_flight" in plan, plan


def test_sqlite_finds_a_runners_jobs_in_flight_without_its_history(sqlite_db: Database) -> None:
    """Each ``ready`` runs this read. Until its first ``ANALYZE`` over rows, a store has no
    statistics, and SQLite read the runner's jobs through ``index_job_runner_id``: every job the
    runner ever ran (migration 0021)."""
    plan = _plan(sqlite_db, jobs._IN_FLIGHT_FOR_RUNNER.statement.params(runner_id=1))
    assert "index_job_runner_in_flight" in plan, plan


def test_sqlite_asks_whether_an_organization_has_a_member_through_an_index(
    sqlite_db: Database,
) -> None:
    """Each submission asks (migration 0021); the unique index of memberships leads with the
    user, and without one that leads with the organization every membership was read."""
    plan = _plan(sqlite_db, accounts._ORGANIZATION_CLAIMED.statement.params(org_id=1))
    assert "index_organization_role_organization" in plan, plan
