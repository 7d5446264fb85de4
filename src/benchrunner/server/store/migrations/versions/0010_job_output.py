"""job output: a finished job's small output kept in the database, beside its status

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-25 10:20:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "job_output",
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["job_id"], ["job.id"], name=op.f("fk_job_output_job_id_job"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("job_id", name=op.f("pk_job_output")),
    )


def downgrade() -> None:
    # Older code reads outputs from the blob store only: dropping the rows would lose them.
    kept = op.get_bind().execute(sa.text("SELECT count(*) FROM job_output")).scalar_one()
    if kept:
        raise RuntimeError(
            f"{kept} job outputs are stored in the database (table job_output), which the "
            "older schema cannot hold; downgrading would lose them"
        )
    op.drop_table("job_output")
