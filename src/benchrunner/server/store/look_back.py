"""What the change-point look-back reads of a series' points besides their values and reports
(``store.history``): when each report was stored and whether it was noisy, and the alerts on
the points (docs/how-to/thresholds-alerts.md#change-points-that-look-back).

Few statements whatever the series' length: the reports' facts in one (a window's ~60
reports), the alerts through the series' own index, ``metric (benchmark_id, measure_id,
report_id)``, in one per 500 benchmarks; only points that carry an alert come back.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.server.store.history import IN_LIST_CHUNK, Series
from benchrunner.server.store.tables import alert, boundary, metric, report


@dataclass(frozen=True)
class OnPoint:
    """An alert on a point (a metric) of the series."""

    alert_id: int
    status: str
    verdict: str | None
    change: bool
    """A change point's alert."""
    modified: dt.datetime
    """When its status last changed (a dismissal's time)."""


@dataclass(frozen=True)
class ReportFacts:
    stored: dt.datetime
    """When the report was stored (not its start time, which a backdated run sets)."""
    noisy: bool
    """Its noise verdict was ``noisy``: its thresholds did not judge it."""


@dataclass(frozen=True)
class PointsFacts:
    reports: dict[int, ReportFacts]
    """By report id: every report of the points."""
    alerts: dict[int, OnPoint]
    """By metric id: the alert on its boundary (a metric has one boundary, a boundary one
    alert); a point without one is absent."""


_REPORTS = sa.select(report.c.id, report.c.created, report.c.noise).where(
    report.c.id.in_(sa.bindparam("report_ids", expanding=True))
)

_ALERTS = (
    sa.select(
        metric.c.id,
        alert.c.id.label("alert_id"),
        alert.c.status,
        alert.c.verdict,
        alert.c.change_pvalue,
        alert.c.modified,
    )
    .select_from(metric)
    .join(boundary, boundary.c.metric_id == metric.c.id)
    .join(alert, alert.c.boundary_id == boundary.c.id)
    .where(
        metric.c.benchmark_id.in_(sa.bindparam("benchmark_ids", expanding=True)),
        metric.c.measure_id == sa.bindparam("measure_id"),
        metric.c.report_id.in_(sa.bindparam("report_ids", expanding=True)),
    )
)


def _chunks(ids: Iterable[int]) -> list[list[int]]:
    ordered = sorted(set(ids))
    return [
        ordered[start : start + IN_LIST_CHUNK] for start in range(0, len(ordered), IN_LIST_CHUNK)
    ]


def points_facts(
    conn: Connection, measure_id: int, series: Mapping[int, Sequence[Series]]
) -> PointsFacts:
    """The facts of the points of ``series`` (by benchmark id, of one measure; each
    benchmark's points in one series or more): their reports' (when each was stored, whether
    it was noisy) and the alerts on them."""
    report_ids = {r for parts in series.values() for part in parts for r in part.report_ids}
    reports: dict[int, ReportFacts] = {}
    for chunk in _chunks(report_ids):
        for report_id, created, noise in conn.execute(_REPORTS, {"report_ids": chunk}):
            noisy = noise is not None and json.loads(noise).get("verdict") == "noisy"
            reports[report_id] = ReportFacts(created, noisy)
    wanted = {m for parts in series.values() for part in parts for m in part.metric_ids}
    alerts: dict[int, OnPoint] = {}
    for benchmarks in _chunks(series):
        # the reports of these benchmarks' points: a window's worth, unless some series miss
        # reports and reach further back
        of_these = [r for b in benchmarks for part in series[b] for r in part.report_ids]
        for chunk in _chunks(of_these):
            params = {"benchmark_ids": benchmarks, "measure_id": measure_id, "report_ids": chunk}
            for row in conn.execute(_ALERTS, params):
                if row.id in wanted:  # not an iteration the series' cut left out
                    alerts[row.id] = OnPoint(
                        int(row.alert_id),
                        row.status,
                        row.verdict,
                        row.change_pvalue is not None,
                        row.modified,
                    )
    return PointsFacts(reports, alerts)
