"""The migrations build exactly the schema the code declares, on every engine."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from benchrunner.server.store.engine import make_engine
from benchrunner.server.store.migrate import alembic_config, upgrade
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


def _job_indexes(engine: sa.Engine) -> list[tuple[str, str]]:
    """Each index of ``job`` as the database itself writes it (order and WHERE included)."""
    query = (
        "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'job'"
        if engine.dialect.name == "postgresql"
        else "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'job'"
    )
    with engine.connect() as conn:
        return sorted((row[0], str(row[1])) for row in conn.exec_driver_sql(query))


def test_signed_results_migration_downgrades_without_rebuilding_the_job_table(
    database_url: str,
) -> None:
    engine = make_engine(database_url, writer=False)
    command.upgrade(alembic_config(engine), "0012")  # signed results, and nothing after it
    indexes = _job_indexes(engine)
    command.downgrade(alembic_config(engine), "0011")
    engine.dispose()
    engine = make_engine(database_url, writer=False)
    columns = {c["name"] for c in sa.inspect(engine).get_columns("job")}
    assert not columns & {"output_hash", "output_signature", "output_key_fingerprint"}
    assert _job_indexes(engine) == indexes
    upgrade(engine)
    with engine.connect() as conn:
        assert compare_metadata(MigrationContext.configure(conn), metadata) == []
    engine.dispose()
