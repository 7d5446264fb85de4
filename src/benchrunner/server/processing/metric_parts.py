"""A report's metrics stored in parts, each its own short write transaction where one writer
holds the database at a time (SQLite; docs/decisions/processing.md).

The job stays ``completed`` while its parts are stored: the first part goes with the job's
write (``processor.record_processed``), the rest (``metrics_rest``) one write each, then its
report's judgment moves it to ``processed`` (``judgment.judge_later``). A server stopped in
between leaves it ``completed``: it is processed again, and each part stores only the metrics
the report does not hold yet (``reports.metrics_add_missing``), so none is stored twice.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Sequence

from sqlalchemy.engine import Connection

from benchrunner.server.store import capabilities, jobs, reports
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


def _store_part(
    conn: Connection, job: jobs.JobRow, part: list[reports.MetricValue], now: dt.datetime
) -> list[reports.StoredMetric] | None:
    """One part stored (those of its metrics the report lacks); None, with nothing written,
    when the job left ``completed`` (processed by another meanwhile)."""
    if not jobs.job_lock_completed(conn, job.id):
        return None
    return reports.metrics_add_missing(conn, job.report_id, job.project_id, part, now)


async def metrics_rest(
    db: Database,
    job: jobs.JobRow,
    rest: Sequence[reports.MetricValue],
    now: dt.datetime,
) -> list[reports.StoredMetric] | None:
    """Store ``rest`` of ``job``'s metrics, ``METRIC_PART`` a write transaction; their stored
    metrics, or None when the job left ``completed`` meanwhile (the rest is not stored)."""
    stored: list[reports.StoredMetric] = []
    for start in range(0, len(rest), METRIC_PART):
        if start:
            await asyncio.sleep(0)  # an inline write does not yield by itself
        part = await db.write(_store_part, job, list(rest[start : start + METRIC_PART]), now)
        if part is None:
            return None
        stored += part
    return stored
