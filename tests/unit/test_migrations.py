"""The migrations build exactly the schema the code declares, on every engine."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from benchrunner.server.store.engine import make_engine
from benchrunner.server.store.migrate import upgrade
from benchrunner.server.store.tables import metadata


def test_migrated_schema_matches_the_tables(database_url: str) -> None:
    engine = make_engine(database_url, writer=False)
    upgrade(engine)
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), metadata)
    engine.dispose()
    assert diff == []


def test_sqlite_runs_in_wal_mode(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'm.db'}", writer=False)
    upgrade(engine)
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
    engine.dispose()


def test_seed_000_job_indexes_exist(database_url: str) -> None:
    engine = make_engine(database_url, writer=False)
    upgrade(engine)
    names = {ix["name"] for ix in sa.inspect(engine).get_indexes("job")}
    engine.dispose()
    assert {
        "index_job_pending",
        "index_job_org_in_flight",
        "index_job_source_ip_in_flight",
        "index_job_in_flight",
        "index_job_runner_id",
        "index_job_spec_id",
        "index_job_report_id",
    } <= names
