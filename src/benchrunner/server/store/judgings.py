"""A report's judgment under way (docs/decisions/processing.md): its metrics are stored, its
boundaries and alerts are being written in short transactions. ``report.judging`` holds what
judging it again needs (JSON, ``processing.judgment.Judging``) from the transaction that stored
the metrics to the judgment's last write, which clears it; a report a crash left with it set is
judged again (a runner job's by the processor, as its job is still ``completed``; a direct
run's at startup)."""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.core.states import JobStatus
from benchrunner.server.store.reports import StoredMetric
from benchrunner.server.store.tables import benchmark, job, metric, metric_sample, report

_UNPROCESSED = sa.or_(
    ~sa.exists().where(job.c.report_id == report.c.id),
    sa.exists().where(job.c.report_id == report.c.id, job.c.status == int(JobStatus.COMPLETED)),
)

_START = (
    report.update()
    .where(report.c.id == sa.bindparam("report_id"), report.c.judging.is_(None), _UNPROCESSED)
    .values(judging=sa.bindparam("judging"))
    .returning(report.c.id)
)


STORING = "storing"
"""The prefix of ``report.judging`` while the report's metrics are stored in several
transactions (``processing.judgment``); history reads leave such a report out."""


def judging_start(conn: Connection, report_id: int, judging: str) -> bool:
    """Mark the report's judgment under way (``judging``: what judging it again needs); False,
    with nothing written, when it is under way already (its metrics are stored: an earlier
    attempt's) or its job is no longer ``completed``."""
    return conn.execute(_START, {"report_id": report_id, "judging": judging}).first() is not None


def judging_end(conn: Connection, report_id: int, error: str | None = None) -> None:
    """The report's judgment is written (or, with ``error``, given up: the report keeps it):
    nothing is left to judge again."""
    values: dict[str, str | None] = {"judging": None}
    if error is not None:
        values["error"] = error
    conn.execute(report.update().where(report.c.id == report_id).values(values))


def judging_set(conn: Connection, report_id: int, judging: str) -> None:
    """Replace what judging the report again needs, while its judgment is under way."""
    conn.execute(
        report.update()
        .where(report.c.id == report_id, report.c.judging.is_not(None))
        .values(judging=judging)
    )


def judging_of(conn: Connection, report_id: int) -> str | None:
    """What judging the report again needs, while its judgment is under way; else None."""
    found = conn.execute(sa.select(report.c.judging).where(report.c.id == report_id)).scalar()
    return None if found is None else str(found)


_DIRECT_UNDER_WAY = sa.select(report.c.id).where(
    report.c.judging.is_not(None), ~sa.exists().where(job.c.report_id == report.c.id)
)


def direct_judgings(conn: Connection) -> list[int]:
    """The reports of direct runs (no job) whose judgment is under way: at startup, those a
    crash interrupted."""
    return [int(i) for i in conn.execute(_DIRECT_UNDER_WAY.order_by(report.c.id)).scalars()]


_METRICS_OF = (
    sa.select(metric.c.id, metric.c.benchmark_id, metric.c.measure_id, metric.c.value)
    .where(metric.c.report_id == sa.bindparam("report_id"))
    .order_by(metric.c.id)
)
_BENCHMARKS_NAMED = sa.select(benchmark.c.id).where(
    benchmark.c.project_id
    == sa.select(report.c.project_id)
    .where(report.c.id == sa.bindparam("report_id"))
    .scalar_subquery(),
    benchmark.c.name.in_(sa.bindparam("names", expanding=True)),
)


def stored_metrics(
    conn: Connection, report_id: int, never_alerts: Sequence[str]
) -> list[StoredMetric]:
    """The report's metrics in the order they were stored; ``never_alerts``: the benchmarks
    (by name) whose metrics never alert."""
    quiet: set[int] = set()
    if never_alerts:
        params = {"report_id": report_id, "names": sorted(set(never_alerts))}
        quiet = {int(i) for i in conn.execute(_BENCHMARKS_NAMED, params).scalars()}
    rows = conn.execute(_METRICS_OF, {"report_id": report_id})
    return [
        StoredMetric(row.id, row.benchmark_id, row.measure_id, row.value, row.benchmark_id in quiet)
        for row in rows
    ]


_SAMPLES_OF = metric_sample.delete().where(
    metric_sample.c.metric_id.in_(
        sa.select(metric.c.id).where(metric.c.report_id == sa.bindparam("report_id"))
    )
)
_METRICS_DROP = metric.delete().where(metric.c.report_id == sa.bindparam("report_id"))


def metrics_drop(conn: Connection, report_id: int) -> None:
    """Delete the metrics (and their samples) a crash left of a report stored in parts: they
    are stored again, or the report keeps none."""
    conn.execute(_SAMPLES_OF, {"report_id": report_id})
    conn.execute(_METRICS_DROP, {"report_id": report_id})
