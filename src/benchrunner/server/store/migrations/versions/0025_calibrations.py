"""calibrations: A/A runs of one job on one spec and the reports they made, from which a
threshold per benchmark is proposed (docs/how-to/thresholds-alerts.md)

Revision ID: 0025
Revises: 0024
Create Date: 2026-11-29 02:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from benchrunner.server.store.tables import UtcDateTime

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None


def _fk(column: str, table: str, ondelete: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        [column],
        [f"{table}.id"],
        name=op.f(f"fk_calibration_{column}_{table}"),
        ondelete=ondelete,
    )


def upgrade() -> None:
    op.create_table(
        "calibration",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("uuid", sa.Uuid(), nullable=False),
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("spec_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=True),
        sa.Column("branch_id", sa.Integer(), nullable=False),
        sa.Column("target_branch_id", sa.Integer(), nullable=False),
        sa.Column("testbed_id", sa.Integer(), nullable=False),
        sa.Column("runs", sa.Integer(), nullable=False),
        sa.Column("false_alarm_rate", sa.Float(), nullable=False),
        sa.Column("created", UtcDateTime(), nullable=False),
        sa.Column("applied", UtcDateTime(), nullable=True),
        _fk("project_id", "project", "CASCADE"),
        _fk("spec_id", "spec", "CASCADE"),
        _fk("user_id", "user", "SET NULL"),
        _fk("branch_id", "branch", "CASCADE"),
        _fk("target_branch_id", "branch", "CASCADE"),
        _fk("testbed_id", "testbed", "CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_calibration")),
        sa.UniqueConstraint("uuid", name=op.f("uq_calibration_uuid")),
    )
    op.create_index("index_calibration_project", "calibration", ["project_id"])
    op.create_table(
        "calibration_report",
        sa.Column("calibration_id", sa.Integer(), nullable=False),
        sa.Column("report_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["calibration_id"],
            ["calibration.id"],
            name=op.f("fk_calibration_report_calibration_id_calibration"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["report_id"],
            ["report.id"],
            name=op.f("fk_calibration_report_report_id_report"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("calibration_id", "report_id", name=op.f("pk_calibration_report")),
    )


def downgrade() -> None:
    op.drop_table("calibration_report")
    op.drop_index("index_calibration_project", table_name="calibration")
    op.drop_table("calibration")
