"""The kinds of ``job_event`` rows: the audit list (docs/decisions/audit-events.md), mapped onto our
transitions.

Every status change writes one event, named after what happened rather than only the status
reached: a move to ``failed`` is ``job_failed`` when the runner reported it,
``heartbeat_stale_recovered`` when the heartbeat stopped and ``recovered_after_crash`` when the
server found it orphaned at start-up. A user's cancel writes ``job_cancel_requested`` (the user
as actor) before ``job_canceled``; a rerun writes ``job_rerun`` on the old job.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType

from benchrunner.core.states import JobStatus

SYSTEM_ACTOR = "system"


class JobEvent(enum.StrEnum):
    CREATED = "job_created"
    """Submitted (or rerun): actor, source IP, user agent, API token name; ``rerun_of``."""
    CLAIMED = "job_claimed"
    RETURNED = "job_returned"
    """claimed -> pending: the claim never reached its runner (its connection ended first)."""
    STARTED = "job_started"
    """claimed -> running: the runner began the benchmark."""
    COMPLETED = "job_completed"
    """The runner delivered a result (also after a heartbeat failure: ``late`` in the message)."""
    PROCESSED = "job_processed"
    """The result was parsed into the report (an audit list's ``job_succeeded``)."""
    FAILED = "job_failed"
    CANCEL_REQUESTED = "job_cancel_requested"
    CANCELED = "job_canceled"
    TIMEOUT = "job_timeout"
    """Ran longer than its timeout plus grace: canceled by the server."""
    HEARTBEAT_STALE_RECOVERED = "heartbeat_stale_recovered"
    RECOVERED_AFTER_CRASH = "recovered_after_crash"
    RERUN = "job_rerun"
    """On the old job: a new job (``meta.job``) runs the same config."""


JUDGMENT_FAILED_META: Mapping[str, str] = MappingProxyType({"judgment": "failed"})
"""The ``meta`` of a ``job_processed`` event whose report's thresholds could not be judged
(its alerts are unknown): a gate on the job's alerts fails on it."""


def judgment_failed(event_type: str, meta: object) -> bool:
    """Whether an event says its job's judgment failed (``JUDGMENT_FAILED_META``)."""
    return (
        event_type == JobEvent.PROCESSED
        and isinstance(meta, dict)
        and meta.get("judgment") == JUDGMENT_FAILED_META["judgment"]
    )


TRANSITION_EVENT: dict[JobStatus, JobEvent] = {
    JobStatus.CLAIMED: JobEvent.CLAIMED,
    JobStatus.RUNNING: JobEvent.STARTED,
    JobStatus.COMPLETED: JobEvent.COMPLETED,
    JobStatus.PROCESSED: JobEvent.PROCESSED,
    JobStatus.FAILED: JobEvent.FAILED,
    JobStatus.CANCELED: JobEvent.CANCELED,
}
"""The event a move to each status writes unless the caller names a more specific one."""

_STATUS_REACHED: dict[str, JobStatus] = {
    JobEvent.CREATED: JobStatus.PENDING,
    JobEvent.RETURNED: JobStatus.PENDING,
    **{event: status for status, event in TRANSITION_EVENT.items()},
    JobEvent.TIMEOUT: JobStatus.CANCELED,
    JobEvent.HEARTBEAT_STALE_RECOVERED: JobStatus.FAILED,
    JobEvent.RECOVERED_AFTER_CRASH: JobStatus.FAILED,
}


def status_reached(event_type: str) -> JobStatus | None:
    """The status an event left its job in (``pending`` for its creation), or None for an
    event that moved nothing (a cancel request, a rerun) or a name this version does not know."""
    return _STATUS_REACHED.get(event_type)
