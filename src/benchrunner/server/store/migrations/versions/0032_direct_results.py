"""direct results: a direct run's results kept on its report until its judgment's last write
(``report.direct_results``), so that recovery finishes a judgment a stop cut short
(docs/decisions/processing.md)

Revision ID: 0032
Revises: 0031
Create Date: 2026-11-30 13:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0032"
down_revision = "0031"
branch_labels = None
depends_on = None

_AWAITS_JUDGMENT = sa.text("direct_results IS NOT NULL")


def upgrade() -> None:
    with op.batch_alter_table("report") as batch_op:
        batch_op.add_column(sa.Column("direct_results", sa.LargeBinary(), nullable=True))
    op.create_index(
        "index_report_awaits_judgment",
        "report",
        ["created"],
        sqlite_where=_AWAITS_JUDGMENT,
        postgresql_where=_AWAITS_JUDGMENT,
    )


def downgrade() -> None:
    op.drop_index("index_report_awaits_judgment", table_name="report")
    with op.batch_alter_table("report") as batch_op:
        batch_op.drop_column("direct_results")
