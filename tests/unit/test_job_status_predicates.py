"""The status predicates of the job table's partial indexes (tables.py) select exactly the
states they stand for, and the migrated indexes say them as ranges (migration 0020)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from benchrunner.core.states import IN_FLIGHT, JobStatus
from benchrunner.server.store.engine import Database
from benchrunner.server.store.tables import in_flight, job, pending

LEFT_PROCESSING = {JobStatus.FAILED, JobStatus.CANCELED, JobStatus.PROCESSED}


def _holds(db: Database, predicate: sa.ColumnElement[bool] | sa.TextClause) -> bool:
    return bool(db.write_sync(lambda conn: conn.execute(sa.select(predicate)).scalar_one()))


@pytest.mark.parametrize("status", list(JobStatus))
def test_each_predicate_selects_its_states(migrated_db: Database, status: JobStatus) -> None:
    value = sa.literal(int(status))
    assert _holds(migrated_db, in_flight(value)) == (status in IN_FLIGHT)
    assert _holds(migrated_db, pending(value)) == (status == JobStatus.PENDING)
    kept = sa.text(f"{int(status)} >= 4")  # index_job_outputs_kept's status term
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


def test_sqlite_finds_in_flight_jobs_through_the_partial_index(migrated_db: Database) -> None:
    if not migrated_db.sqlite:
        pytest.skip("SQLite's planner only")
    query = sa.select(job.c.id).where(in_flight(job.c.status), job.c.organization_id == 1)
    sql = str(query.compile(migrated_db.write_engine, compile_kwargs={"literal_binds": True}))
    with migrated_db.write_engine.connect() as conn:
        plan = " ".join(str(row[-1]) for row in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}"))
    assert "index_job_org_in_flight" in plan, plan
