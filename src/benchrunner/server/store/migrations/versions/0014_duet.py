"""duet: a duet job's paired verdict, apart from the absolute metrics

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-25 10:50:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from benchrunner.server.store.tables import UtcDateTime

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "duet",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("report_id", sa.Integer(), nullable=False),
        sa.Column("seed", sa.BigInteger(), nullable=False),
        sa.Column("rounds", sa.Integer(), nullable=False),
        sa.Column("sequence", sa.Text(), nullable=False),
        sa.Column("method", sa.String(length=128), nullable=False),
        sa.Column("resamples", sa.Integer(), nullable=False),
        sa.Column("confidence", sa.Float(), nullable=False),
        sa.Column("margin", sa.Float(), nullable=False),
        sa.Column("created", UtcDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["report_id"], ["report.id"], name=op.f("fk_duet_report_id_report"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_duet")),
        sa.UniqueConstraint("report_id", name="uq_duet_report_id"),
    )
    op.create_table(
        "duet_result",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("duet_id", sa.Integer(), nullable=False),
        sa.Column("benchmark_id", sa.Integer(), nullable=False),
        sa.Column("measure_id", sa.Integer(), nullable=False),
        sa.Column("rounds", sa.Integer(), nullable=False),
        sa.Column("ratio", sa.Float(), nullable=False),
        sa.Column("lower_value", sa.Float(), nullable=False),
        sa.Column("upper_value", sa.Float(), nullable=False),
        sa.Column("limit", sa.String(length=8), nullable=True),
        sa.ForeignKeyConstraint(
            ["duet_id"], ["duet.id"], name=op.f("fk_duet_result_duet_id_duet"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["benchmark_id"],
            ["benchmark.id"],
            name=op.f("fk_duet_result_benchmark_id_benchmark"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["measure_id"],
            ["measure.id"],
            name=op.f("fk_duet_result_measure_id_measure"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_duet_result")),
    )
    op.create_index("index_duet_result_duet", "duet_result", ["duet_id"], unique=False)


def downgrade() -> None:
    op.drop_index("index_duet_result_duet", table_name="duet_result")
    op.drop_table("duet_result")
    op.drop_table("duet")
