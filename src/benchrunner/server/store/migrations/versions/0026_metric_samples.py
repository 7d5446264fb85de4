"""metric samples: a metric's raw samples (its harness's per-sample figures, or the iterations a
fold made one), bounded, with the count, minimum and maximum of them all; and the samples
test's verdict on a boundary (docs/reference/thresholds.md)

Revision ID: 0026
Revises: 0025
Create Date: 2026-11-29 01:50:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "metric_sample",
        sa.Column("metric_id", sa.Integer(), nullable=False),
        sa.Column("sample_values", sa.Text(), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.Column("minimum", sa.Float(), nullable=False),
        sa.Column("maximum", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(
            ["metric_id"],
            ["metric.id"],
            name=op.f("fk_metric_sample_metric_id_metric"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("metric_id", name=op.f("pk_metric_sample")),
    )
    with op.batch_alter_table("boundary") as batch_op:
        batch_op.add_column(sa.Column("verdict", sa.String(length=16), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("boundary") as batch_op:
        batch_op.drop_column("verdict")
    # The metrics themselves stay: only the samples beyond each metric's value are dropped.
    op.drop_table("metric_sample")
