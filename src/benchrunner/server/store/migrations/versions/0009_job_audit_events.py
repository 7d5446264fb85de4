"""job audit events: job_event.event_type takes the audit names (job_created, job_failed,
heartbeat_stale_recovered, ...) instead of the status reached; older rows are renamed, the
server's own failure and timeout reasons telling which name each gets

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-25 07:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

_event = sa.table("job_event", sa.column("event_type", sa.String), sa.column("message", sa.Text))

# (old type, message pattern or None for any, new type), the specific patterns first.
_RENAMES: tuple[tuple[str, str | None, str], ...] = (
    ("failed", "%heartbeat_timeout:%", "heartbeat_stale_recovered"),
    ("failed", "orphaned:%", "recovered_after_crash"),
    ("canceled", "%job_timeout_exceeded:%", "job_timeout"),
    ("created", None, "job_created"),
    ("claimed", None, "job_claimed"),
    ("running", None, "job_started"),
    ("completed", None, "job_completed"),
    ("processed", None, "job_processed"),
    ("failed", None, "job_failed"),
    ("canceled", None, "job_canceled"),
)


def upgrade() -> None:
    for old, pattern, new in _RENAMES:
        matches = [_event.c.event_type == old]
        if pattern is not None:
            matches.append(_event.c.message.like(pattern))
        op.execute(sa.update(_event).where(*matches).values(event_type=new))


def downgrade() -> None:
    # Events the old names had no word for: a user's cancel request (its job_canceled follows)
    # and a rerun have no status of their own.
    op.execute(
        sa.delete(_event).where(_event.c.event_type.in_(["job_cancel_requested", "job_rerun"]))
    )
    for old, _pattern, new in _RENAMES:
        op.execute(sa.update(_event).where(_event.c.event_type == new).values(event_type=old))
