"""api_token: the time its user revoked it (a revoked token authenticates no one, and its row
stays for the record, as Bencher keeps revoked tokens listable)

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-25 14:20:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from benchrunner.server.store.tables import UtcDateTime

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("api_token", schema=None) as batch_op:
        batch_op.add_column(sa.Column("revoked", UtcDateTime(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("api_token", schema=None) as batch_op:
        batch_op.drop_column("revoked")
