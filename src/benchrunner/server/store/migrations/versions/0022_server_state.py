"""server_state: what every replica on the database must agree on (the signing key, the blob
store's identity), kept in the database instead of each replica's data directory
(docs/how-to/postgresql-replicas.md)

Revision ID: 0022
Revises: 0021
Create Date: 2026-11-28 22:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from benchrunner.server.store.tables import UtcDateTime

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "server_state",
        sa.Column("name", sa.String(32), nullable=False),
        sa.Column("value", sa.String(255), nullable=False),
        sa.Column("created", UtcDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_server_state")),
    )


def downgrade() -> None:
    op.drop_table("server_state")
