"""The queue as ``/metrics`` and the health check show it: jobs waiting or in flight by status
and tier, and the oldest heartbeat of a job in flight. Read when asked, never kept up to date."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.core.states import JobStatus
from benchrunner.core.tiers import Tier, tier_of
from benchrunner.server.store.tables import in_flight, job, pending


def _count_where(condition: sa.ColumnElement[bool]) -> sa.Select[Any]:
    return (
        sa.select(job.c.status, job.c.priority, sa.func.count())
        .where(condition)
        .group_by(job.c.status, job.c.priority)
    )


_QUEUE_DEPTH = sa.union_all(
    # Each condition written as a partial index on ``job`` has it, so that each count reads
    # that index, not the whole table with every job ever run.
    _count_where(pending(job.c.status)),
    _count_where(in_flight(job.c.status)),
    _count_where(job.c.status == sa.literal_column("3")),
)
_OLDEST_HEARTBEAT = sa.select(sa.func.min(job.c.last_heartbeat)).where(in_flight(job.c.status))


@dataclass(frozen=True)
class QueueStats:
    depth: Counter[tuple[JobStatus, Tier]]
    oldest_heartbeat: dt.datetime | None

    def by_status(self) -> dict[str, int]:
        """Jobs per status (pending, claimed, running, completed), every tier together."""
        totals = {
            s.wire: 0
            for s in (JobStatus.PENDING, JobStatus.CLAIMED, JobStatus.RUNNING, JobStatus.COMPLETED)
        }
        for (status, _tier), count in self.depth.items():
            totals[status.wire] += count
        return totals

    def heartbeat_lag(self, now: dt.datetime) -> float:
        """Seconds since the oldest stored heartbeat of a job in flight; 0 when none."""
        if self.oldest_heartbeat is None:
            return 0.0
        return max(0.0, (now - self.oldest_heartbeat).total_seconds())


def queue_stats(conn: Connection) -> QueueStats:
    depth: Counter[tuple[JobStatus, Tier]] = Counter()
    for status, priority, count in conn.execute(_QUEUE_DEPTH):
        depth[JobStatus(status), tier_of(priority)] += int(count)
    oldest = conn.execute(_OLDEST_HEARTBEAT).scalar()
    return QueueStats(depth, oldest)
