"""The history a metric is judged against: earlier values of the same branch (with its start
point's inherited versions), testbed, benchmark and measure.

One query reads the history of many benchmarks of one measure at once, newest first per
benchmark and cut to the model's sample size in the database (a window function), so
processing a report costs one query per threshold, not one per metric. The query walks
``metric (benchmark_id, measure_id, report_id)``: its cost follows the series' own length,
never other projects' history.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.server.store.tables import baseline_reset, metric, report

IN_LIST_CHUNK = 500


@dataclass(frozen=True)
class Point:
    metric_id: int
    value: float


@dataclass(frozen=True)
class Scope:
    """Where a report's history lies."""

    report_id: int
    branch_id: int
    testbed_id: int
    until: dt.datetime
    """The judged report's start time: later reports are not its history."""
    head_reset: dt.datetime | None
    start_point_branch_id: int | None
    start_point_version: int | None
    start_point_max_versions: int | None


def scope_of(row: Any) -> Scope:
    """The scope of a report row read by ``reports.report_row``."""
    return Scope(
        report_id=row.id,
        branch_id=row.branch_id,
        testbed_id=row.testbed_id,
        until=row.start_time,
        head_reset=row.head_reset,
        start_point_branch_id=row.start_point_branch_id,
        start_point_version=row.start_point_version,
        start_point_max_versions=row.start_point_max_versions,
    )


_RESET_CUTOFF = (
    sa.select(sa.func.max(report.c.start_time))
    .select_from(baseline_reset.join(report, report.c.id == baseline_reset.c.report_id))
    .where(
        baseline_reset.c.branch_id == sa.bindparam("branch_id"),
        baseline_reset.c.testbed_id == sa.bindparam("testbed_id"),
        sa.or_(
            baseline_reset.c.measure_id == sa.bindparam("measure_id"),
            baseline_reset.c.measure_id.is_(None),
        ),
    )
)


def reset_cutoff(conn: Connection, scope: Scope, measure_id: int) -> dt.datetime | None:
    """The start time of the latest baseline reset of this series: earlier reports do not
    count."""
    found: dt.datetime | None = conn.execute(
        _RESET_CUTOFF,
        {"branch_id": scope.branch_id, "testbed_id": scope.testbed_id, "measure_id": measure_id},
    ).scalar()
    return found


def _branch_condition(scope: Scope) -> sa.ColumnElement[bool]:
    own: sa.ColumnElement[bool] = report.c.branch_id == scope.branch_id
    if scope.head_reset is not None:
        own = sa.and_(own, report.c.created >= scope.head_reset)
    if scope.start_point_branch_id is None or scope.start_point_version is None:
        return own
    inherited = sa.and_(
        report.c.branch_id == scope.start_point_branch_id,
        report.c.version <= scope.start_point_version,
    )
    if scope.start_point_max_versions is not None:
        inherited = sa.and_(
            inherited,
            report.c.version > scope.start_point_version - scope.start_point_max_versions,
        )
    return sa.or_(own, inherited)


def series_history(
    conn: Connection,
    scope: Scope,
    measure_id: int,
    benchmark_ids: Sequence[int],
    *,
    since: dt.datetime | None,
    max_samples: int | None,
) -> dict[int, list[Point]]:
    """Each benchmark's history, oldest first: at most ``max_samples`` newest values
    (None: all), none older than ``since``, never the judged report's own."""
    ranked = (
        sa.select(
            metric.c.benchmark_id,
            metric.c.id.label("metric_id"),
            metric.c.value,
            report.c.start_time,
            sa.func.row_number()
            .over(
                partition_by=metric.c.benchmark_id,
                order_by=(report.c.start_time.desc(), report.c.id.desc()),
            )
            .label("rank"),
        )
        .join(report, report.c.id == metric.c.report_id)
        .where(
            metric.c.measure_id == sa.bindparam("measure_id"),
            metric.c.benchmark_id.in_(sa.bindparam("benchmark_ids", expanding=True)),
            report.c.testbed_id == scope.testbed_id,
            report.c.id != scope.report_id,
            report.c.start_time <= scope.until,
            _branch_condition(scope),
        )
    )
    if since is not None:
        ranked = ranked.where(report.c.start_time >= since)
    inner = ranked.subquery()
    statement = sa.select(inner.c.benchmark_id, inner.c.metric_id, inner.c.value)
    if max_samples is not None:
        statement = statement.where(inner.c.rank <= max_samples)
    statement = statement.order_by(inner.c.benchmark_id, inner.c.rank.desc())
    found: dict[int, list[Point]] = {benchmark_id: [] for benchmark_id in benchmark_ids}
    ids = sorted(set(benchmark_ids))
    for start in range(0, len(ids), IN_LIST_CHUNK):
        chunk = ids[start : start + IN_LIST_CHUNK]
        for row in conn.execute(statement, {"measure_id": measure_id, "benchmark_ids": chunk}):
            found[row.benchmark_id].append(Point(row.metric_id, row.value))
    return found
