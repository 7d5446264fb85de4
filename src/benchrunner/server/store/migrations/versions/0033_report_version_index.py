"""report version index: a branch's reports indexed by version and then id, so that a new
report's version (the latest report's, ``store.reports._next_version``) is read from one end
of the index rather than by sorting every report of its branch

Revision ID: 0033
Revises: 0032
Create Date: 2026-11-30 19:30:00
"""

from __future__ import annotations

from alembic import op

revision = "0033"
down_revision = "0032"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.drop_index("index_report_branch_version", table_name="report")
    op.create_index("index_report_branch_version", "report", ["branch_id", "version", "id"])


def downgrade() -> None:
    op.drop_index("index_report_branch_version", table_name="report")
    op.create_index("index_report_branch_version", "report", ["branch_id", "version"])
