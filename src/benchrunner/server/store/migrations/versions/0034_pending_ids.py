"""pending ids: the pending jobs indexed by id (as ``id + 0`` and ``id - 0``: see
``tables.PENDING_ORDER``), the server's and each organization's, so that the submission caps
find the span of pending ids from the ends of an index and count jobs only when that span
reaches a cap (``store.backlog``); ``index_job_report_id`` dropped, since
``index_job_report_status`` begins with the same column and every move of a job wrote both;
``index_job_pending`` ends with the id, the claims' last order key, so that a claim reads its
one job from the index in claim order instead of sorting a batch of them

Revision ID: 0034
Revises: 0033
Create Date: 2026-12-01 02:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0034"
down_revision = "0033"
branch_labels = None
depends_on = None

_PENDING = sa.text("status = 0")
_PENDING_ORDER = sa.text("(id + 0)")
_ORG_PENDING_ORDER = sa.text("(id - 0)")


_PENDING_ORDER_BEFORE: list[str | sa.TextClause | sa.ColumnElement[object]] = [
    "status",
    sa.literal_column("priority DESC"),
    sa.literal_column("created ASC"),
]


def upgrade() -> None:
    # Plain index statements, no batch: a batch copy of the job table would rebuild its
    # indexes (and lose the DESC of index_job_pending on SQLite).
    op.drop_index("index_job_report_id", table_name="job")
    op.drop_index("index_job_org_pending", table_name="job")
    op.drop_index("index_job_pending", table_name="job")
    op.create_index(
        "index_job_pending",
        "job",
        [*_PENDING_ORDER_BEFORE, sa.literal_column("id ASC")],
        sqlite_where=_PENDING,
        postgresql_where=_PENDING,
    )
    op.create_index(
        "index_job_org_pending",
        "job",
        ["status", "organization_id", _ORG_PENDING_ORDER],
        sqlite_where=_PENDING,
        postgresql_where=_PENDING,
    )
    op.create_index(
        "index_job_pending_id",
        "job",
        ["status", _PENDING_ORDER],
        sqlite_where=_PENDING,
        postgresql_where=_PENDING,
    )


def downgrade() -> None:
    op.drop_index("index_job_pending_id", table_name="job")
    op.drop_index("index_job_org_pending", table_name="job")
    op.drop_index("index_job_pending", table_name="job")
    op.create_index(
        "index_job_pending",
        "job",
        _PENDING_ORDER_BEFORE,
        sqlite_where=_PENDING,
        postgresql_where=_PENDING,
    )
    op.create_index(
        "index_job_org_pending",
        "job",
        ["organization_id"],
        sqlite_where=_PENDING,
        postgresql_where=_PENDING,
    )
    op.create_index("index_job_report_id", "job", ["report_id"])
