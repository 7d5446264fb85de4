"""job log: a running job's live output, chunk by chunk

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-25 07:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "job_log",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.Column("stream", sa.String(length=8), nullable=False),
        sa.Column("stream_offset", sa.BigInteger(), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("data", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["job_id"], ["job.id"], name=op.f("fk_job_log_job_id_job"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_job_log")),
        sa.UniqueConstraint(
            "job_id", "stream", "stream_offset", name="uq_job_log_job_stream_offset"
        ),
    )
    with op.batch_alter_table("job_log", schema=None) as batch_op:
        batch_op.create_index("index_job_log_job_id", ["job_id", "id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("job_log", schema=None) as batch_op:
        batch_op.drop_index("index_job_log_job_id")
    op.drop_table("job_log")
