"""Apply the Alembic migrations that ship inside the package.

With several replicas on one PostgreSQL database, the first to start migrates and the others
wait for it (a session-level advisory lock), then find nothing left to do. A replica older than
the database's schema (a newer replica migrated it during a rolling upgrade) refuses to start:
its queries would not match the tables.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util.exc import CommandError
from sqlalchemy.engine import Engine

from benchrunner import __version__
from benchrunner.server.store import capabilities

MIGRATIONS = Path(__file__).with_name("migrations")
MIGRATION_LOCK = {"a": 3, "b": 1}
"""Two-key advisory lock held while migrating; (3, 0) is the sweeper's."""


class SchemaTooNew(RuntimeError):
    """The database was migrated by a newer benchrunner than this one."""


def alembic_config(engine: Engine) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["engine"] = engine
    return config


@contextlib.contextmanager
def _migration_lock(engine: Engine) -> Iterator[None]:
    if not capabilities.of(engine).concurrent_writers:
        yield  # SQLite serves one server process; its write lock orders the rest
        return
    with engine.connect() as conn:
        conn.execute(sa.text("SELECT pg_advisory_lock(:a, :b)"), MIGRATION_LOCK)
        conn.commit()
        try:
            yield
        finally:
            conn.execute(sa.text("SELECT pg_advisory_unlock(:a, :b)"), MIGRATION_LOCK)
            conn.commit()


def check_schema_not_newer(engine: Engine) -> None:
    """``SchemaTooNew`` when the database's schema revision is one this version does not know."""
    scripts = ScriptDirectory.from_config(alembic_config(engine))
    with engine.connect() as conn:
        current = MigrationContext.configure(conn).get_current_revision()
    if current is None:
        return
    try:
        known = scripts.get_revision(current)
    except CommandError:
        known = None
    if known is None:
        raise SchemaTooNew(
            f"the database's schema is at revision {current}, newer than benchrunner "
            f"{__version__} knows (its newest is {scripts.get_current_head()}): a newer "
            "benchrunner migrated it; run that version (or newer) on this replica too"
        )


def upgrade(engine: Engine) -> None:
    """Migrate to this version's newest schema, once across replicas; ``SchemaTooNew`` when the
    database is already past it."""
    with _migration_lock(engine):
        check_schema_not_newer(engine)
        command.upgrade(alembic_config(engine), "head")
