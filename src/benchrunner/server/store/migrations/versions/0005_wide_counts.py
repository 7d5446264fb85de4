"""wide counts: a model's sample sizes and window and a branch's start point max_versions hold
Bencher's whole range (up to 2**32 - 1), which PostgreSQL's 32-bit integer cannot

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-25 01:10:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

_COLUMNS = (
    ("model", "min_sample_size"),
    ("model", "max_sample_size"),
    ("model", "window_seconds"),
    ("branch", "start_point_max_versions"),
)


def _alter(to: type[sa.Integer]) -> None:
    # SQLite's INTEGER already holds 64 bits (and a type change there rebuilds the table).
    if op.get_bind().dialect.name != "postgresql":
        return
    for table, column in _COLUMNS:
        op.alter_column(table, column, type_=to(), existing_nullable=True)


def upgrade() -> None:
    _alter(sa.BigInteger)


def downgrade() -> None:
    _alter(sa.Integer)
