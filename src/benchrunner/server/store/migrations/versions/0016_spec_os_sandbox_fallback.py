"""spec: the operating system and sandbox Bencher's runner reads, and the fallback mark (when an
admin made the spec the one for jobs submitted without a spec)

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-25 10:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from benchrunner.server.store.tables import UtcDateTime

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("spec", schema=None) as batch_op:
        batch_op.add_column(sa.Column("os", sa.String(16), nullable=False, server_default="linux"))
        batch_op.add_column(sa.Column("sandbox", sa.String(16), nullable=True))
        batch_op.add_column(sa.Column("fallback", UtcDateTime(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("spec", schema=None) as batch_op:
        batch_op.drop_column("fallback")
        batch_op.drop_column("sandbox")
        batch_op.drop_column("os")
