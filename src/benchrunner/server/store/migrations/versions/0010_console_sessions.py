"""console sessions: one row per signed-in browser, found by the SHA-256 of its cookie

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-25 10:10:00
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
        "console_session",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column(
            "user_id",
            sa.Integer,
            sa.ForeignKey(
                "user.id", ondelete="CASCADE", name=op.f("fk_console_session_user_id_user")
            ),
            nullable=False,
        ),
        sa.Column("created", sa.DateTime(), nullable=False),
        sa.Column("expires", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_console_session")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_console_session_token_hash")),
    )


def downgrade() -> None:
    op.drop_table("console_session")
