"""confirmations: a threshold's ``confirm`` count, the re-runs of a runner job whose metric
crossed it, and whether its alert was confirmed (docs/how-to/thresholds-alerts.md)

Revision ID: 0029
Revises: 0028
Create Date: 2026-11-29 05:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from benchrunner.server.store.tables import UtcDateTime

revision = "0029"
down_revision = "0028"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("threshold") as batch_op:
        batch_op.add_column(sa.Column("confirm", sa.Integer(), nullable=True))
    with op.batch_alter_table("alert") as batch_op:
        batch_op.add_column(sa.Column("confirmation", sa.String(16), nullable=True))
    with op.batch_alter_table("report") as batch_op:
        batch_op.add_column(sa.Column("confirms_report_id", sa.Integer(), nullable=True))
        batch_op.create_foreign_key(
            op.f("fk_report_confirms_report_id_report"),
            "report",
            ["confirms_report_id"],
            ["id"],
            ondelete="CASCADE",
        )
        batch_op.create_index("index_report_confirms", ["confirms_report_id"])
    op.create_table(
        "confirmation",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("report_id", sa.Integer(), nullable=False),
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.Column("runs", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("created", UtcDateTime(), nullable=False),
        sa.Column("decided", UtcDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["report_id"],
            ["report.id"],
            name=op.f("fk_confirmation_report_id_report"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["job_id"], ["job.id"], name=op.f("fk_confirmation_job_id_job"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_confirmation")),
        sa.UniqueConstraint("report_id", name=op.f("uq_confirmation_report_id")),
    )
    op.create_index("index_confirmation_state", "confirmation", ["state"])


def downgrade() -> None:
    op.drop_index("index_confirmation_state", table_name="confirmation")
    op.drop_table("confirmation")
    with op.batch_alter_table("report") as batch_op:
        batch_op.drop_index("index_report_confirms")
        batch_op.drop_constraint(op.f("fk_report_confirms_report_id_report"), type_="foreignkey")
        batch_op.drop_column("confirms_report_id")
    with op.batch_alter_table("alert") as batch_op:
        batch_op.drop_column("confirmation")
    with op.batch_alter_table("threshold") as batch_op:
        batch_op.drop_column("confirm")
