"""The server keeps SQLite's planner statistics (``store.planner``): at startup and on each
housekeeping round; PostgreSQL keeps its own."""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path

import sqlalchemy as sa

from benchrunner.server.app.factory import build_context
from benchrunner.server.config import ServerSettings
from benchrunner.server.recovery.housekeeping import Housekeeping
from benchrunner.server.store import accounts
from benchrunner.server.store.engine import Database, is_sqlite
from benchrunner.server.store.planner import refresh_statistics

NOW = dt.datetime(2026, 11, 25, tzinfo=dt.UTC)


def _analyzed_tables(db: Database) -> set[str]:
    def unit(conn: sa.Connection) -> set[str]:
        return set(conn.exec_driver_sql("SELECT tbl FROM sqlite_stat1").scalars())

    return db.read_sync(unit)


def _add_users(db: Database) -> None:
    def unit(conn: sa.Connection) -> None:
        for k in range(3):
            accounts.user_get_or_create(conn, f"u{k}@bench.dev", f"u{k}", admin=False, now=NOW)

    db.write_sync(unit)


def test_statistics_are_gathered_on_sqlite_only(migrated_db: Database) -> None:
    _add_users(migrated_db)
    gathered = migrated_db.write_sync(refresh_statistics)
    assert gathered is migrated_db.sqlite
    if migrated_db.sqlite:
        assert "user" in _analyzed_tables(migrated_db)


def test_startup_and_housekeeping_gather_them(database_url: str, tmp_path: Path) -> None:
    settings = ServerSettings(db=database_url, data_dir=tmp_path / "data")
    ctx = build_context(settings)
    try:
        if not is_sqlite(database_url):
            return  # nothing to see: PostgreSQL's own autovacuum analyzes
        assert _analyzed_tables(ctx.db)  # ANALYZE ran on what the migrations stored
        _add_users(ctx.db)
        assert "user" not in _analyzed_tables(ctx.db)
        assert asyncio.run(Housekeeping(ctx, leads=lambda: True).step())
        assert "user" in _analyzed_tables(ctx.db)
    finally:
        ctx.db.close()
