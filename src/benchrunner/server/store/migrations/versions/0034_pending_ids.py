"""pending ids: the pending jobs indexed by id (as ``id + 0``: see ``tables.PENDING_ORDER``), the
server's and each organization's, so that the submission caps find the span of pending ids from
the ends of an index and count jobs only when that span reaches a cap (``store.backlog``);
``index_job_report_id`` dropped, since
``index_job_report_status`` begins with the same column and every move of a job wrote both

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


def upgrade() -> None:
    with op.batch_alter_table("job", schema=None) as batch_op:
        batch_op.drop_index("index_job_report_id")
        batch_op.drop_index(
            "index_job_org_pending", sqlite_where=_PENDING, postgresql_where=_PENDING
        )
        batch_op.create_index(
            "index_job_org_pending",
            ["status", "organization_id", _PENDING_ORDER],
            unique=False,
            sqlite_where=_PENDING,
            postgresql_where=_PENDING,
        )
        batch_op.create_index(
            "index_job_pending_id",
            ["status", _PENDING_ORDER],
            unique=False,
            sqlite_where=_PENDING,
            postgresql_where=_PENDING,
        )


def downgrade() -> None:
    with op.batch_alter_table("job", schema=None) as batch_op:
        batch_op.drop_index(
            "index_job_pending_id", sqlite_where=_PENDING, postgresql_where=_PENDING
        )
        batch_op.drop_index(
            "index_job_org_pending", sqlite_where=_PENDING, postgresql_where=_PENDING
        )
        batch_op.create_index(
            "index_job_org_pending",
            ["organization_id"],
            unique=False,
            sqlite_where=_PENDING,
            postgresql_where=_PENDING,
        )
        batch_op.create_index("index_job_report_id", ["report_id"], unique=False)
