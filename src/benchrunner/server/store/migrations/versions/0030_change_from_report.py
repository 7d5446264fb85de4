"""change from report: the last report before a change point's step, kept on its alert so the
alert can say "between versions X and Y" (``alert.change_from_report_id``)
(docs/how-to/thresholds-alerts.md#change-points-that-look-back)

Revision ID: 0030
Revises: 0029
Create Date: 2026-11-29 09:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0030"
down_revision = "0029"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("alert") as batch_op:
        batch_op.add_column(sa.Column("change_from_report_id", sa.Integer(), nullable=True))
        batch_op.create_foreign_key(
            op.f("fk_alert_change_from_report_id_report"),
            "report",
            ["change_from_report_id"],
            ["id"],
            ondelete="SET NULL",
        )
        batch_op.create_index("index_alert_change_from", ["change_from_report_id"])


def downgrade() -> None:
    with op.batch_alter_table("alert") as batch_op:
        batch_op.drop_index("index_alert_change_from")
        batch_op.drop_constraint(op.f("fk_alert_change_from_report_id_report"), type_="foreignkey")
        batch_op.drop_column("change_from_report_id")
