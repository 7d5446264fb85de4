"""The migrations build exactly the schema the code declares, on every engine."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from benchrunner.core.tiers import Plan
from benchrunner.detection.duet import METHOD, DuetEstimate
from benchrunner.server.store import accounts, duets, reports
from benchrunner.server.store.engine import SQLITE_CACHE_KIB, make_engine
from benchrunner.server.store.migrate import alembic_config, upgrade
from benchrunner.server.store.tables import alert, duet_result, metadata
from tests.new_reports import new_report_on

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


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


def test_sqlite_connections_keep_the_page_cache_documented(tmp_path: Path) -> None:
    """``SQLITE_CACHE_PRAGMA`` is a literal statement: it must set ``SQLITE_CACHE_KIB``."""
    engine = make_engine(f"sqlite:///{tmp_path / 'c.db'}", writer=False)
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA cache_size").scalar() == -SQLITE_CACHE_KIB
    engine.dispose()


def test_seed_000_job_indexes_exist(database_url: str) -> None:
    engine = make_engine(database_url, writer=False)
    upgrade(engine)
    # read from the catalog: SQLAlchemy's reflection leaves out the indexes on an expression
    names = {name for name, _ in _job_indexes(engine)}
    engine.dispose()
    assert {
        "index_job_pending",
        "index_job_pending_id",
        "index_job_org_pending",
        "index_job_org_in_flight",
        "index_job_source_ip_in_flight",
        "index_job_in_flight",
        "index_job_runner_id",
        "index_job_spec_id",
        "index_job_report_status",
    } <= names
    assert "index_job_report_id" not in names  # index_job_report_status begins with its column


def _words(ddl: str) -> str:
    return " ".join(ddl.replace('"', "").replace("(", " ").replace(")", " ").split())


def test_migrated_indexes_on_an_expression_are_the_tables(tmp_path: Path) -> None:
    """On SQLite, Alembic's comparison skips the indexes on an expression (``store.backlog``
    reads the ends of two): each is compared here with the ``CREATE INDEX`` the tables'
    declaration compiles to."""
    engine = make_engine(f"sqlite:///{tmp_path / 'x.db'}", writer=False)
    upgrade(engine)
    indexes = dict(_job_indexes(engine))
    declared = {str(index.name): index for index in metadata.tables["job"].indexes}
    for name in ("index_job_pending_id", "index_job_org_pending"):
        index = declared[name]
        assert not all(isinstance(expression, sa.Column) for expression in index.expressions)
        created = str(sa.schema.CreateIndex(index).compile(dialect=engine.dialect))
        assert _words(indexes[name]) == _words(created), (indexes[name], created)
    engine.dispose()


def test_pending_ids_migration_downgrades_to_the_indexes_before_it(database_url: str) -> None:
    engine = make_engine(database_url, writer=False)
    command.upgrade(alembic_config(engine), "0033")
    before = _job_indexes(engine)
    command.upgrade(alembic_config(engine), "0034")
    assert _job_indexes(engine) != before
    command.downgrade(alembic_config(engine), "0033")
    assert _job_indexes(engine) == before
    engine.dispose()


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


def _store_a_duet(engine: sa.Engine, margin: float) -> int:
    """A public project's duet report judged with the run's ``margin``: sort +6..14 % and
    hash within +-2 %. Returns the report's id."""
    estimates = [
        DuetEstimate("sort", "latency", 8, 1.10, 1.06, 1.14, None),
        DuetEstimate("hash", "latency", 8, 1.0, 0.99, 1.01, None),
    ]
    with engine.begin() as conn:
        leader = accounts.user_get_or_create(conn, "m@x", "m", admin=False, now=T0).id
        org = accounts.organization_create(conn, "mig", Plan.TEAM, T0, leader_id=leader)
        project = accounts.project_create(conn, org.id, "m", "public", T0).id
        new = new_report_on(conn, project, "main", "box", "json", T0)
        report_id, _ = reports.report_create(conn, new)
        found = duets.NewDuet(42, 8, "AB BA", METHOD, 2000, 0.95, margin, estimates)
        duets.duet_add(conn, report_id, project, found, T0)
    return report_id


def test_duet_alerts_migration_raises_the_old_verdicts_and_refuses_to_drop_them(
    database_url: str,
) -> None:
    engine = make_engine(database_url, writer=True)
    upgrade(engine)
    report_id = _store_a_duet(engine, margin=0.01)  # one result beyond 1 % (an alert), one not
    with pytest.raises(RuntimeError, match="1 alerts are on duet results"):
        command.downgrade(alembic_config(engine), "0018")
    with engine.begin() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(alert)).scalar_one() == 1
        conn.execute(alert.delete())
    command.downgrade(alembic_config(engine), "0018")
    engine.dispose()

    engine = make_engine(database_url, writer=True)
    upgrade(engine)  # the stored verdict beyond its margin becomes the alert it meant
    with engine.connect() as conn:
        (raised,) = conn.execute(sa.select(alert)).all()
        results = conn.execute(
            sa.select(duet_result.c.limit, duet_result.c.lower_margin, duet_result.c.upper_margin,
                      duet_result.c.margin_source).order_by(duet_result.c.id)
        ).all()  # fmt: skip
    engine.dispose()
    assert (raised.report_id, raised.limit, raised.status) == (report_id, "upper", "active")
    assert raised.boundary_id is None and raised.duet_result_id is not None
    assert [tuple(r) for r in results] == [("upper", 0.01, 0.01, "run"), (None, 0.01, 0.01, "run")]
