"""confirmation reason: why a confirmation decided an alert as it did, when its outcome alone
does not say (``alert.confirmation_reason``: "unknown after 50 rounds")
(docs/how-to/thresholds-alerts.md)

Revision ID: 0031
Revises: 0030
Create Date: 2026-11-29 13:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0031"
down_revision = "0030"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("alert") as batch_op:
        batch_op.add_column(sa.Column("confirmation_reason", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("alert") as batch_op:
        batch_op.drop_column("confirmation_reason")
