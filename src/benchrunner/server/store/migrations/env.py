"""Alembic environment: the engine is handed in by ``benchrunner.server.store.migrate``."""

from __future__ import annotations

from alembic import context
from sqlalchemy.engine import Engine

from benchrunner.server.store.tables import metadata

engine: Engine = context.config.attributes["engine"]
with engine.connect() as connection:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()
    connection.commit()
