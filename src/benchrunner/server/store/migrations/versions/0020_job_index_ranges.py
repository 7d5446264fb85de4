"""job index ranges: the partial indexes of in-flight and finished jobs name their statuses as
ranges, not IN lists

SQLite evaluates a partial index's ``status IN (...)`` through a temporary table that it builds
for each row it writes, and every status change of a job writes its row: each such index cost a
transition about 40 microseconds. ``status BETWEEN 1 AND 2`` and ``status >= 4`` select the same
jobs (``core.states``) and cost a comparison.

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-27 14:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

_IN_FLIGHT_BEFORE = "status IN (1, 2)"
_IN_FLIGHT_AFTER = "status BETWEEN 1 AND 2"
_KEPT_BEFORE = "status IN (4, 5, 6) AND outputs_purged IS NULL"
_KEPT_AFTER = "status >= 4 AND outputs_purged IS NULL"

_INDEXES = (
    ("index_job_in_flight", "status", _IN_FLIGHT_BEFORE, _IN_FLIGHT_AFTER),
    ("index_job_org_in_flight", "organization_id", _IN_FLIGHT_BEFORE, _IN_FLIGHT_AFTER),
    ("index_job_source_ip_in_flight", "source_ip", _IN_FLIGHT_BEFORE, _IN_FLIGHT_AFTER),
    ("index_job_outputs_kept", "modified", _KEPT_BEFORE, _KEPT_AFTER),
)


def _recreate(after: bool) -> None:
    for name, column, before_where, after_where in _INDEXES:
        where = sa.text(after_where if after else before_where)
        op.drop_index(name, table_name="job")
        op.create_index(name, "job", [column], sqlite_where=where, postgresql_where=where)


def upgrade() -> None:
    _recreate(after=True)


def downgrade() -> None:
    _recreate(after=False)
