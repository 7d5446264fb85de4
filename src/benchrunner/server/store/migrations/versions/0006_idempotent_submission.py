"""idempotent submission and backpressure: idempotency keys of POST /v0/run, and the index an
organization's pending-jobs cap counts

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-25 07:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import benchrunner.server.store.tables

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

_PENDING = sa.text("status = 0")


def upgrade() -> None:
    op.create_table(
        "idempotency_key",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("owner", sa.String(length=64), nullable=False),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("payload_hash", sa.String(length=64), nullable=False),
        sa.Column("report_id", sa.Integer(), nullable=True),
        sa.Column("created", benchrunner.server.store.tables.UtcDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["report_id"],
            ["report.id"],
            name=op.f("fk_idempotency_key_report_id_report"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_idempotency_key")),
        sa.UniqueConstraint("owner", "key", name="uq_idempotency_key_owner_key"),
    )
    with op.batch_alter_table("idempotency_key", schema=None) as batch_op:
        batch_op.create_index("index_idempotency_key_created", ["created"], unique=False)
    with op.batch_alter_table("job", schema=None) as batch_op:
        batch_op.create_index(
            "index_job_org_pending",
            ["organization_id"],
            unique=False,
            sqlite_where=_PENDING,
            postgresql_where=_PENDING,
        )


def downgrade() -> None:
    with op.batch_alter_table("job", schema=None) as batch_op:
        batch_op.drop_index(
            "index_job_org_pending", sqlite_where=_PENDING, postgresql_where=_PENDING
        )
    with op.batch_alter_table("idempotency_key", schema=None) as batch_op:
        batch_op.drop_index("index_idempotency_key_created")
    op.drop_table("idempotency_key")
