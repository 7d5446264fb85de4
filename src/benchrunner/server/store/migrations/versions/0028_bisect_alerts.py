"""bisect alerts: a threshold that starts a bisection of its alerts (``threshold.bisect``), a
report's range of commits since the previous one and the image recipe of each
(``report.bisect_range``, ``report.bisect_image``), and an alert's bisection request
(``alert.bisect``, ``alert.bisect_reason``) (docs/how-to/bisect.md)

Revision ID: 0028
Revises: 0027
Create Date: 2026-11-29 05:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0028"
down_revision = "0027"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("threshold") as batch_op:
        batch_op.add_column(
            sa.Column("bisect", sa.Boolean(), nullable=False, server_default=sa.false())
        )
    with op.batch_alter_table("threshold") as batch_op:
        batch_op.alter_column("bisect", server_default=None)
    with op.batch_alter_table("report") as batch_op:
        batch_op.add_column(sa.Column("bisect_range", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("bisect_image", sa.String(512), nullable=True))
    with op.batch_alter_table("alert") as batch_op:
        batch_op.add_column(sa.Column("bisect", sa.String(16), nullable=True))
        batch_op.add_column(sa.Column("bisect_reason", sa.Text(), nullable=True))
    op.create_index("index_alert_bisect", "alert", ["bisect"])


def downgrade() -> None:
    op.drop_index("index_alert_bisect", table_name="alert")
    with op.batch_alter_table("alert") as batch_op:
        batch_op.drop_column("bisect_reason")
        batch_op.drop_column("bisect")
    with op.batch_alter_table("report") as batch_op:
        batch_op.drop_column("bisect_image")
        batch_op.drop_column("bisect_range")
    with op.batch_alter_table("threshold") as batch_op:
        batch_op.drop_column("bisect")
