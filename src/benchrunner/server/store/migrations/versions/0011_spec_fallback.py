"""spec fallback: when an admin made a spec the one image jobs without a spec run on

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-25 10:45:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import benchrunner.server.store.tables

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("spec") as batch:
        batch.add_column(
            sa.Column("fallback", benchrunner.server.store.tables.UtcDateTime(), nullable=True)
        )


def downgrade() -> None:
    with op.batch_alter_table("spec") as batch:
        batch.drop_column("fallback")
