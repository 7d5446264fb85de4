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


def _entered(job: JobRow, status: JobStatus) -> dt.datetime:
    """When ``job`` entered ``status``, as far as the caller's copy of its row tells (its last
    change when that copy predates the move into ``status``)."""
    entered = {
        JobStatus.PENDING: job.created,
        JobStatus.CLAIMED: job.claimed,
        JobStatus.RUNNING: job.started,
        JobStatus.COMPLETED: job.completed,
    }.get(status)
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
    entered = _entered(job, source)
    duration_ms = max(0, round((now - entered).total_seconds() * 1000))
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
    log.info(
        "job %s",
        to.wire,
        extra={
            "job": str(job.uuid),
            "runner": runner,
            "status_from": source.wire,
            "status_to": to.wire,
            "duration_ms": duration_ms,
            "tier": tier.value,
            "reason": reason,
        },
    )
