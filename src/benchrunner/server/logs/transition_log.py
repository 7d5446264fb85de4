"""What every job status change leaves behind in this process: one structured log line and the
metrics counters. Called after a transition's compare-and-set succeeded; it costs no database
round trip (the time spent in the previous status comes from the row the caller holds)."""

from __future__ import annotations

import datetime as dt
import enum
import logging

from benchrunner.core.states import JobStatus
from benchrunner.core.tiers import tier_of
from benchrunner.server.context import ServerContext
from benchrunner.server.store.jobs import JobRow

log = logging.getLogger("benchrunner.transitions")


class Timeout(enum.StrEnum):
    """Which timeout ended a job (the ``kind`` of ``benchrunner_job_timeouts_total``)."""

    JOB = "job"
    HEARTBEAT = "heartbeat"


_ENTERED = {
    JobStatus.PENDING: "created",
    JobStatus.CLAIMED: "claimed",
    JobStatus.RUNNING: "started",
    JobStatus.COMPLETED: "completed",
}
"""The column of a job's row that says when it entered a status, where one does."""

_EVENTS = {status: f"job {status.wire}" for status in JobStatus}
"""Each line's message, by the status reached: made once, not formatted per line."""


def _entered(job: JobRow, status: JobStatus) -> dt.datetime:
    """When ``job`` entered ``status``, as far as the caller's copy of its row tells (its last
    change when that copy predates the move into ``status``)."""
    column = _ENTERED.get(status)
    entered: dt.datetime | None = getattr(job, column) if column is not None else None
    return entered or job.modified


def job_moved(
    ctx: ServerContext,
    job: JobRow,
    to: JobStatus,
    now: dt.datetime,
    *,
    source: JobStatus | None = None,
    runner: str | None = None,
    reason: str | None = None,
    timeout: Timeout | None = None,
) -> None:
    """Log and count the move of ``job`` from ``source`` (default: the status its row holds) to
    ``to``, made at ``now``."""
    source = job.status if source is None else source
    tier = tier_of(job.priority)
    metrics = ctx.metrics
    metrics.transition(source, to).inc()
    if to == JobStatus.CLAIMED:
        metrics.claims_of[tier].inc()
        metrics.queue_duration_of[tier].observe((now - job.created).total_seconds())
    elif to == JobStatus.RUNNING:
        metrics.starts.inc()
    elif to == JobStatus.FAILED:
        metrics.failures.inc()
    elif to == JobStatus.CANCELED:
        metrics.cancellations.inc()
    if timeout is not None:
        metrics.timeouts.labels(kind=timeout.value).inc()
    if not log.isEnabledFor(logging.INFO):
        return
    duration_ms = max(0, round((now - _entered(job, source)).total_seconds() * 1000))
    # The line's fields; one left empty is not written (``logs.server_log``), so none is set.
    fields: dict[str, object] = {"job": str(job.uuid)}
    if runner is not None:
        fields["runner"] = runner
    fields["status_from"] = source.wire
    fields["status_to"] = to.wire
    fields["duration_ms"] = duration_ms
    fields["tier"] = tier.value
    if reason is not None:
        fields["reason"] = reason
    # The record ``log.info`` would make, made directly: no caller lookup, no check of the
    # fields against the record's own attributes (none of these names is one).
    record = logging.LogRecord(log.name, logging.INFO, "", 0, _EVENTS[to], None, None)
    record.__dict__.update(fields)
    log.handle(record)
