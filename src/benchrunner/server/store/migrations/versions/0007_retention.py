"""retention: when a terminal job's stored outputs were deleted, and the index that finds the
jobs whose outputs are still kept

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-25 07:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from benchrunner.server.store.tables import UtcDateTime

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

_KEPT = sa.text("status IN (4, 5, 6) AND outputs_purged IS NULL")


def upgrade() -> None:
    with op.batch_alter_table("job", schema=None) as batch_op:
        batch_op.add_column(sa.Column("outputs_purged", UtcDateTime(), nullable=True))
        batch_op.create_index(
            "index_job_outputs_kept",
            ["modified"],
            unique=False,
            sqlite_where=_KEPT,
            postgresql_where=_KEPT,
        )


def downgrade() -> None:
    with op.batch_alter_table("job", schema=None) as batch_op:
        batch_op.drop_index("index_job_outputs_kept", sqlite_where=_KEPT, postgresql_where=_KEPT)
        batch_op.drop_column("outputs_purged")
