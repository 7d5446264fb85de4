"""noise guard: per-spec guard and limits, the noise figures on a report, and thresholds that
alert on a noisy report only when asked

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-25 10:50:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("spec") as batch_op:
        batch_op.add_column(
            sa.Column("noise_guard", sa.Boolean(), nullable=False, server_default=sa.true())
        )
        batch_op.add_column(sa.Column("noise_cv_limit", sa.Float(), nullable=True))
        batch_op.add_column(sa.Column("noise_drift_limit", sa.Float(), nullable=True))
    with op.batch_alter_table("spec") as batch_op:
        batch_op.alter_column("noise_guard", server_default=None)
    with op.batch_alter_table("report") as batch_op:
        batch_op.add_column(sa.Column("noise", sa.Text(), nullable=True))
    with op.batch_alter_table("threshold") as batch_op:
        batch_op.add_column(
            sa.Column("alert_when_noisy", sa.Boolean(), nullable=False, server_default=sa.false())
        )
    with op.batch_alter_table("threshold") as batch_op:
        batch_op.alter_column("alert_when_noisy", server_default=None)


def downgrade() -> None:
    with op.batch_alter_table("threshold") as batch_op:
        batch_op.drop_column("alert_when_noisy")
    with op.batch_alter_table("report") as batch_op:
        batch_op.drop_column("noise")
    with op.batch_alter_table("spec") as batch_op:
        batch_op.drop_column("noise_drift_limit")
        batch_op.drop_column("noise_cv_limit")
        batch_op.drop_column("noise_guard")
