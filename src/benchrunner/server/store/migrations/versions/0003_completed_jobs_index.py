"""completed jobs index: the sweeper finds results a dead replica stored but never processed

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-21 21:35:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("job", schema=None) as batch_op:
        batch_op.create_index(
            "index_job_completed",
            ["modified"],
            unique=False,
            sqlite_where=sa.text("status = 3"),
            postgresql_where=sa.text("status = 3"),
        )


def downgrade() -> None:
    with op.batch_alter_table("job", schema=None) as batch_op:
        batch_op.drop_index(
            "index_job_completed",
            sqlite_where=sa.text("status = 3"),
            postgresql_where=sa.text("status = 3"),
        )
