"""A report's metrics stored in parts, each its own short write transaction where one writer
holds the database at a time (SQLite; docs/decisions/processing.md), a runner job's and a
direct run's alike.

A runner job stays ``completed`` while its parts are stored: the first part goes with the job's
write (``processor.record_processed``), the rest (``metrics_rest``) one write each, then its
report's judgment moves it to ``processed`` (``judgment.judge_later``). A direct run's report
is created with its first part and awaits its judgment (``store.pending_judgments``), its
results kept, until that judgment's last write. A server stopped in between leaves the job
``completed`` or the report awaiting: it is processed or judged again, and each part stores
only the metrics the report does not hold yet (``reports.metrics_add_missing``), so none is
stored twice.
"""

from __future__ import annotations

import asyncio
import collections
import datetime as dt
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from sqlalchemy.engine import Connection

from benchrunner.server.store import capabilities, jobs, pending_judgments, reports
from benchrunner.server.store.engine import Database

METRIC_PART = 100
"""Metrics one write transaction stores at most on SQLite: about 4 ms of its writer's CPU
(``benchmarks/RESULTS.md``, "Reports at scale")."""


def stored_in_parts(conn: Connection, values: Sequence[reports.MetricValue]) -> bool:
    """Whether ``values`` take more than one write transaction (``first_part``)."""
    return len(values) > METRIC_PART and not capabilities.of(conn).concurrent_writers


def first_part(
    conn: Connection, values: Sequence[reports.MetricValue]
) -> tuple[list[reports.MetricValue], list[reports.MetricValue]]:
    """The metrics to store in this write transaction, and those left for ``metrics_rest``:
    all now where writers run concurrently (PostgreSQL: a long insert blocks no other)."""
    if not stored_in_parts(conn, values):
        return list(values), []
    return list(values[:METRIC_PART]), list(values[METRIC_PART:])


class Owner(NamedTuple):
    """The report whose metrics are stored, and the runner job it belongs to (None: a direct
    run's report, awaiting its judgment)."""

    report_id: int
    project_id: int
    job_id: int | None


def job_owner(job: jobs.JobRow) -> Owner:
    return Owner(job.report_id, job.project_id, job.id)


def _store_part(
    conn: Connection,
    owner: Owner,
    part: list[reports.MetricValue],
    now: dt.datetime,
    earlier: Mapping[reports.MetricId, int],
) -> list[reports.StoredMetric] | None:
    """One part stored (those of its metrics the report lacks); None, with nothing written,
    when the job left ``completed`` or the report no longer awaits its judgment (judged by
    another meanwhile)."""
    locked = (
        pending_judgments.lock_awaiting(conn, owner.report_id)
        if owner.job_id is None
        else jobs.job_hold_completed(conn, owner.job_id, now)
    )
    if not locked:
        return None
    return reports.metrics_add_missing(conn, owner.report_id, owner.project_id, part, now, earlier)


async def metrics_rest(
    db: Database,
    owner: Owner,
    rest: Sequence[reports.MetricValue],
    now: dt.datetime,
    before: Sequence[reports.StoredMetric] = (),
) -> list[reports.StoredMetric] | None:
    """Store ``rest`` of ``owner``'s metrics, ``METRIC_PART`` a write transaction (all in one
    where writers run concurrently); their stored metrics, or None when the job left
    ``completed`` or the report was judged meanwhile (the rest is not stored). ``before``:
    the metrics stored ahead of ``rest`` (its first part), so that a result of the same
    metric as one of them is a metric of its own (``reports.metrics_add_missing``)."""
    stored: list[reports.StoredMetric] = []
    earlier = collections.Counter(metric.key for metric in before)
    step = max(len(rest), 1) if db.capabilities.concurrent_writers else METRIC_PART
    for start in range(0, len(rest), step):
        if start:
            await asyncio.sleep(0)  # an inline write does not yield by itself
        values = list(rest[start : start + step])
        part = await db.write(_store_part, owner, values, now, earlier)
        if part is None:
            return None
        stored += part
        earlier.update(metric.key for metric in part)
    return stored
