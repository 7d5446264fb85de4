"""job list indexes: a project's newest jobs read in order, and counted by status, from indexes

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-25 11:10:00
"""

from __future__ import annotations

from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("job", schema=None) as batch_op:
        batch_op.create_index("index_job_created", ["created", "id"], unique=False)
        batch_op.create_index("index_job_report_status", ["report_id", "status"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("job", schema=None) as batch_op:
        batch_op.drop_index("index_job_report_status")
        batch_op.drop_index("index_job_created")
