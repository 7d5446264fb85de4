"""bisections: a bisection, its versions in order, its duet steps and their jobs
(docs/how-to/bisect.md)

Revision ID: 0027
Revises: 0026
Create Date: 2026-11-29 01:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from benchrunner.server.store.tables import UtcDateTime

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None


def _fk(table: str, column: str, target: str, ondelete: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        [column],
        [f"{target}.id"],
        name=op.f(f"fk_{table}_{column}_{target}"),
        ondelete=ondelete,
    )


def upgrade() -> None:
    op.create_table(
        "bisection",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("uuid", sa.Uuid(), nullable=False),
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("spec_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=True),
        sa.Column("branch_id", sa.Integer(), nullable=False),
        sa.Column("testbed_id", sa.Integer(), nullable=False),
        sa.Column("alert_id", sa.Integer(), nullable=True),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("measure", sa.String(255), nullable=False),
        sa.Column("benchmarks", sa.Text(), nullable=False),
        sa.Column("adapter", sa.String(32), nullable=False),
        sa.Column("good", sa.String(64), nullable=False),
        sa.Column("bad", sa.String(64), nullable=False),
        sa.Column("image", sa.String(512), nullable=True),
        sa.Column("template", sa.String(255), nullable=True),
        sa.Column("args", sa.Text(), nullable=True),
        sa.Column("timeout", sa.Integer(), nullable=False),
        sa.Column("rounds", sa.Integer(), nullable=False),
        sa.Column("margin", sa.Float(), nullable=False),
        sa.Column("confidence", sa.Float(), nullable=False),
        sa.Column("job_budget", sa.Integer(), nullable=False),
        sa.Column("jobs_used", sa.Integer(), nullable=False),
        sa.Column("followed", sa.String(1024), nullable=True),
        sa.Column("bad_ratio", sa.Float(), nullable=True),
        sa.Column("culprit", sa.String(64), nullable=True),
        sa.Column("culprit_parent", sa.String(64), nullable=True),
        sa.Column("culprit_ratio", sa.Float(), nullable=True),
        sa.Column("culprit_lower", sa.Float(), nullable=True),
        sa.Column("culprit_upper", sa.Float(), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("source_ip", sa.String(45), nullable=False),
        sa.Column("actor", sa.String(320), nullable=False),
        sa.Column("created", UtcDateTime(), nullable=False),
        sa.Column("modified", UtcDateTime(), nullable=False),
        sa.Column("finished", UtcDateTime(), nullable=True),
        _fk("bisection", "project_id", "project", "CASCADE"),
        _fk("bisection", "spec_id", "spec", "RESTRICT"),
        _fk("bisection", "user_id", "user", "SET NULL"),
        _fk("bisection", "branch_id", "branch", "CASCADE"),
        _fk("bisection", "testbed_id", "testbed", "CASCADE"),
        _fk("bisection", "alert_id", "alert", "SET NULL"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_bisection")),
        sa.UniqueConstraint("uuid", name=op.f("uq_bisection_uuid")),
    )
    op.create_index("index_bisection_project_created", "bisection", ["project_id", "created"])
    op.create_index("index_bisection_state", "bisection", ["state"])
    op.create_index("index_bisection_alert", "bisection", ["alert_id"])
    op.create_table(
        "bisection_commit",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("bisection_id", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("commit", sa.String(64), nullable=False),
        sa.Column("digest", sa.String(128), nullable=True),
        _fk("bisection_commit", "bisection_id", "bisection", "CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_bisection_commit")),
        sa.UniqueConstraint("bisection_id", "position", name="uq_bisection_commit_position"),
    )
    op.create_table(
        "bisection_step",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("bisection_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("commit", sa.String(64), nullable=False),
        sa.Column("baseline", sa.String(64), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("verdict", sa.String(16), nullable=True),
        sa.Column("rounds", sa.Integer(), nullable=False),
        sa.Column("ratio", sa.Float(), nullable=True),
        sa.Column("lower_value", sa.Float(), nullable=True),
        sa.Column("upper_value", sa.Float(), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("created", UtcDateTime(), nullable=False),
        sa.Column("modified", UtcDateTime(), nullable=False),
        _fk("bisection_step", "bisection_id", "bisection", "CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_bisection_step")),
        sa.UniqueConstraint("bisection_id", "kind", "position", name="uq_bisection_step_kind"),
    )
    op.create_table(
        "bisection_job",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("step_id", sa.Integer(), nullable=False),
        sa.Column("job_id", sa.Integer(), nullable=False),
        _fk("bisection_job", "step_id", "bisection_step", "CASCADE"),
        _fk("bisection_job", "job_id", "job", "CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_bisection_job")),
        sa.UniqueConstraint("job_id", name="uq_bisection_job_job"),
    )
    op.create_index("index_bisection_job_step", "bisection_job", ["step_id"])


def downgrade() -> None:
    op.drop_table("bisection_job")
    op.drop_table("bisection_step")
    op.drop_table("bisection_commit")
    op.drop_table("bisection")
