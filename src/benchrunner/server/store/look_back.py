"""What the change-point look-back reads of a series' points besides their values: each
point's report (and when it was stored) and the alerts on it
(docs/how-to/thresholds-alerts.md#change-points-that-look-back)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import dataclass, field

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.server.store.tables import alert, boundary, metric, report

_CHUNK = 500


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


@dataclass
class PointFacts:
    report_id: int
    stored: dt.datetime
    """When its report was stored (not its start time, which a backdated run sets)."""
    noisy: bool = False
    """Its report's noise verdict was ``noisy``: its thresholds did not judge it."""
    alerts: list[OnPoint] = field(default_factory=list)


_FACTS = (
    sa.select(
        metric.c.id,
        report.c.id.label("report_id"),
        report.c.created,
        report.c.noise,
        alert.c.id.label("alert_id"),
        alert.c.status,
        alert.c.verdict,
        alert.c.change_pvalue,
        alert.c.modified,
    )
    .join(report, report.c.id == metric.c.report_id)
    .outerjoin(boundary, boundary.c.metric_id == metric.c.id)
    .outerjoin(alert, alert.c.boundary_id == boundary.c.id)
    .where(metric.c.id.in_(sa.bindparam("metric_ids", expanding=True)))
)


def points_facts(conn: Connection, metric_ids: Sequence[int]) -> dict[int, PointFacts]:
    """Each metric's report, when it was stored, whether it was noisy, and the alert on its
    boundary (if any)."""
    found: dict[int, PointFacts] = {}
    wanted = sorted(set(metric_ids))
    for start in range(0, len(wanted), _CHUNK):
        chunk = wanted[start : start + _CHUNK]
        for row in conn.execute(_FACTS, {"metric_ids": chunk}):
            facts = found.get(row.id)
            if facts is None:
                noisy = row.noise is not None and json.loads(row.noise).get("verdict") == "noisy"
                facts = found[row.id] = PointFacts(int(row.report_id), row.created, noisy)
            if row.alert_id is not None:
                facts.alerts.append(
                    OnPoint(
                        int(row.alert_id),
                        row.status,
                        row.verdict,
                        row.change_pvalue is not None,
                        row.modified,
                    )
                )
    return found


_REPORT_OF = sa.select(metric.c.report_id).where(metric.c.id == sa.bindparam("metric_id"))


def report_of_metric(conn: Connection, metric_id: int) -> int:
    return int(conn.execute(_REPORT_OF, {"metric_id": metric_id}).scalar_one())
