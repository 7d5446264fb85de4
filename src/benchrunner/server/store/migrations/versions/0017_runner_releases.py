"""runner_release: the runner wheels an admin published, per update channel
(docs/decisions/runner-releases.md)

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-25 14:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from benchrunner.server.store.tables import UtcDateTime

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "runner_release",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("uuid", sa.Uuid(), nullable=False),
        sa.Column("channel", sa.String(16), nullable=False),
        sa.Column("version", sa.String(64), nullable=False),
        sa.Column("checksum", sa.String(64), nullable=False),
        sa.Column("filename", sa.String(255), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("created", UtcDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_runner_release")),
        sa.UniqueConstraint("uuid", name=op.f("uq_runner_release_uuid")),
        sa.UniqueConstraint("channel", "version", name=op.f("uq_runner_release_channel_version")),
    )


def downgrade() -> None:
    op.drop_table("runner_release")
