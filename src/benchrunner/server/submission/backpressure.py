"""Backpressure (docs/decisions/submission.md): submissions that would grow the queue past a cap
are refused with 429 and ``Retry-After``.

Two caps: pending plus in-flight jobs of the whole server (``max_queued_jobs``) and pending jobs
of one organization (``max_pending_per_organization``); 0 turns a cap off, and with both off
nothing is counted. The counts are read in the submission's transaction. On SQLite submissions
are serialized, so a cap holds exactly; on PostgreSQL concurrent submissions do not see each
other's uncommitted jobs, so the queue may overshoot a cap by the submissions in progress at
that moment (at most the write threads of every replica). A runner job's submission counts in the
statement that creates it (``caps_for``), so it costs no statement of its own.
"""

from __future__ import annotations

from sqlalchemy.engine import Connection

from benchrunner.server.config import ServerSettings
from benchrunner.server.http.errors import ApiError
from benchrunner.server.store.backlog import Caps, backlog, room_for_one


def _busy(settings: ServerSettings, message: str) -> ApiError:
    return ApiError(
        429,
        f"{message}; try again in {settings.busy_retry_after} s",
        error_code="queue_full",
        headers={"Retry-After": str(settings.busy_retry_after)},
    )


def caps_for(settings: ServerSettings, organization_id: int) -> Caps | None:
    """The caps a new job of the organization must stay within; None when both are off. A
    statement that creates the job only within them (``jobs.job_create_with_report``) counts
    with its own write, and when it refuses ``check_backlog`` says which cap is full."""
    if not settings.max_queued_jobs and not settings.max_pending_per_organization:
        return None
    return Caps(organization_id, settings.max_queued_jobs, settings.max_pending_per_organization)


def check_backlog(
    conn: Connection, settings: ServerSettings, organization_id: int, organization: str
) -> None:
    """Raise 429 when one more pending job would pass a cap."""
    caps = caps_for(settings, organization_id)
    if caps is None or room_for_one(conn, caps):
        return
    full = caps.full_cap(backlog(conn, caps))
    if full == "queued":
        raise _busy(
            settings,
            f"the server's job queue is full: {caps.queued} jobs are pending or running "
            "(max_queued_jobs)",
        )
    if full == "org":
        raise _busy(
            settings,
            f"organization {organization!r} has {caps.org_pending} pending jobs, its limit "
            "(max_pending_per_organization)",
        )
