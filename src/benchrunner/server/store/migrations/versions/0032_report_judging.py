"""report judging: a report's judgment written in short transactions after its metrics keeps
what judging it again after a crash needs (``report.judging``) until its last write
(docs/decisions/processing.md); and each threshold counts the changes of what its judgments
read (``threshold.history_version``), which a judgment's writes check

Revision ID: 0032
Revises: 0031
Create Date: 2026-11-30 02:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0032"
down_revision = "0031"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("report") as batch_op:
        batch_op.add_column(sa.Column("judging", sa.Text(), nullable=True))
    op.create_index(
        "index_report_judging",
        "report",
        ["id"],
        sqlite_where=sa.text("judging IS NOT NULL"),
        postgresql_where=sa.text("judging IS NOT NULL"),
    )
    with op.batch_alter_table("threshold") as batch_op:
        batch_op.add_column(
            sa.Column("history_version", sa.Integer(), nullable=False, server_default="0")
        )


def downgrade() -> None:
    with op.batch_alter_table("threshold") as batch_op:
        batch_op.drop_column("history_version")
    op.drop_index("index_report_judging", table_name="report")
    with op.batch_alter_table("report") as batch_op:
        batch_op.drop_column("judging")
