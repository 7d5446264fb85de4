"""alert verdicts: an alert's triage (true_positive, false_positive or expected), who set it
last and when, so that each threshold's precision can be measured
(docs/how-to/thresholds-alerts.md)

Revision ID: 0023
Revises: 0022
Create Date: 2026-11-28 23:10:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from benchrunner.server.store.tables import UtcDateTime

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("alert") as batch_op:
        batch_op.add_column(sa.Column("verdict", sa.String(length=16), nullable=True))
        batch_op.add_column(sa.Column("verdict_user_id", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("verdict_at", UtcDateTime(), nullable=True))
        batch_op.create_foreign_key(
            batch_op.f("fk_alert_verdict_user_id_user"),
            "user",
            ["verdict_user_id"],
            ["id"],
            ondelete="SET NULL",
        )


def downgrade() -> None:
    with op.batch_alter_table("alert") as batch_op:
        batch_op.drop_constraint(batch_op.f("fk_alert_verdict_user_id_user"), type_="foreignkey")
        batch_op.drop_column("verdict_at")
        batch_op.drop_column("verdict_user_id")
        batch_op.drop_column("verdict")
