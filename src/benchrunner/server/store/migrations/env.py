"""Alembic environment: the engine is handed in by ``benchrunner.server.store.migrate``."""

from __future__ import annotations

from typing import Any

from alembic import context
from sqlalchemy.engine import Engine

from benchrunner.server.store import capabilities
from benchrunner.server.store.tables import metadata


def _sqlite_foreign_keys(connection: Any, on: bool) -> None:
    """SQLite alters a table by copying it and dropping the original; with foreign keys on,
    that drop would delete every row referencing it (``ON DELETE CASCADE``: a job's events,
    logs). The pragma only works outside a transaction, so it goes to the driver directly."""
    connection.connection.driver_connection.execute(f"PRAGMA foreign_keys={'ON' if on else 'OFF'}")


engine: Engine = context.config.attributes["engine"]
with engine.connect() as connection:
    by_copy = capabilities.of(connection).alters_by_copy
    if by_copy:
        _sqlite_foreign_keys(connection, on=False)
    try:
        context.configure(
            connection=connection,
            target_metadata=metadata,
            render_as_batch=by_copy,
            compare_type=True,
        )
        with context.begin_transaction():
            context.run_migrations()
        connection.commit()
    finally:
        if by_copy:
            _sqlite_foreign_keys(connection, on=True)
