"""What a report's judgment decided, kept to be written later (docs/decisions/processing.md).

The judgment (``evaluation.judge_report``) reads the history and draws every boundary and
alert on a read connection, outside any write transaction; it records them here, in the order
they are written. ``verdicts_write`` writes a slice of them in the caller's write transaction:
the boundaries first (a metric keeps the boundary it has: it is judged once), then the alerts
on them (a boundary keeps the alert it has), then the ``alert.raised`` events and the
bisections asked for.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Connection

from benchrunner.server.processing.webhooks import emit_alert_event
from benchrunner.server.store import alerts

ALERT_ROWS = 4
"""Rows an alert writes, counted against a write's budget: the alert, a lookup of its
boundary, its webhook event and its bisection's mark."""


@dataclass(frozen=True)
class AlertVerdict:
    """An alert to raise on the boundary of ``metric_id`` (recorded before it)."""

    metric_id: int
    side: alerts.Limit
    change: alerts.Change | None
    pending: bool
    """Held back for confirmation runs: neither sent to the webhooks nor bisected."""
    bisect: bool
    zone: tuple[int, ...] = ()
    """A step's alert: the metrics of the points it was drawn from, which its write checks
    for an alert raised since (``judgment``)."""
    known: frozenset[int] = frozenset()
    """Those of ``zone`` that carried a step's alert when the judgment read them."""


Verdict = alerts.NewBoundary | AlertVerdict


class Verdicts:
    """A report's boundaries and alerts, in write order."""

    def __init__(self) -> None:
        self.items: list[Verdict] = []
        self._alerted: set[int] = set()
        self._change_alerted: set[int] = set()

    def boundaries(self, rows: Iterable[alerts.NewBoundary]) -> None:
        self.items.extend(rows)

    def alert(
        self,
        metric_id: int,
        side: alerts.Limit,
        change: alerts.Change | None = None,
        *,
        pending: bool = False,
        bisect: bool = False,
        zone: tuple[tuple[int, ...], frozenset[int]] = ((), frozenset()),
    ) -> bool:
        """Record an alert on the metric's boundary; False when one is recorded already (a
        boundary holds one alert)."""
        if metric_id in self._alerted:
            return False
        self._alerted.add(metric_id)
        if change is not None:
            self._change_alerted.add(metric_id)
        self.items.append(
            AlertVerdict(metric_id, side, change, pending, bisect and not pending, *zone)
        )
        return True

    def change_alerted(self, metric_ids: Iterable[int]) -> set[int]:
        """Those of the metrics on which a step's alert is recorded here (as
        ``alerts.change_alerted`` reads those stored)."""
        return self._change_alerted.intersection(metric_ids)

    def slices(self, rows_per_write: int) -> list[list[Verdict]]:
        """The verdicts cut into consecutive slices of at most ``rows_per_write`` rows (an
        alert counts ``ALERT_ROWS``), at least one verdict each; one empty slice when there
        are none (the judgment's last write still has to be made)."""
        slices: list[list[Verdict]] = [[]]
        rows = 0
        for item in self.items:
            cost = ALERT_ROWS if isinstance(item, AlertVerdict) else 1
            if slices[-1] and rows + cost > rows_per_write:
                slices.append([])
                rows = 0
            slices[-1].append(item)
            rows += cost
        return slices


@dataclass(frozen=True)
class ThresholdVerdicts:
    """One threshold's judgment of a report: where its verdicts go, and how its alerts are
    raised (not at all without ``alerting``; held back with ``pending``; ``bisect``: their
    bisections asked for)."""

    threshold: Any
    report_id: int
    alerting: bool
    pending: bool
    bisect: bool
    verdicts: Verdicts

    def boundary(
        self,
        metric_id: int,
        baseline: float | None,
        lower: float | None = None,
        upper: float | None = None,
        verdict: str | None = None,
    ) -> alerts.NewBoundary:
        t = self.threshold
        return alerts.NewBoundary(metric_id, t.threshold_id, t.id, baseline, lower, upper, verdict)

    def alert(
        self,
        metric_id: int,
        side: alerts.Limit,
        change: alerts.Change | None = None,
        zone: tuple[tuple[int, ...], frozenset[int]] = ((), frozenset()),
    ) -> None:
        """``zone``: a step's points and those that carried a step's alert as read."""
        self.verdicts.alert(
            metric_id, side, change, pending=self.pending, bisect=self.bisect, zone=zone
        )


@dataclass(frozen=True)
class Written:
    raised: int
    """Alerts raised, held back ones included."""


def verdicts_write(
    conn: Connection, report_id: int, items: Sequence[Verdict], now: dt.datetime
) -> Written:
    """Write ``items`` (a slice of a judgment of ``report_id``) in the caller's transaction."""
    alerts.boundaries_insert(conn, [i for i in items if isinstance(i, alerts.NewBoundary)])
    raising = [i for i in items if isinstance(i, AlertVerdict)]
    if not raising:
        return Written(0)
    boundary_of = alerts.boundary_ids(conn, [a.metric_id for a in raising])
    sent: list[int] = []
    to_bisect: list[int] = []
    raised = 0
    for a in raising:
        alert_id = alerts.alert_raise(
            conn, boundary_of[a.metric_id], report_id, a.side, now, a.change, pending=a.pending
        )
        if alert_id is None:
            continue
        raised += 1
        if not a.pending:
            sent.append(alert_id)
        if a.bisect:
            to_bisect.append(alert_id)
    emit_alert_event(conn, "alert.raised", sent, now)
    # The bisection driver starts their bisections (docs/how-to/bisect.md).
    alerts.alerts_bisect_pending(conn, to_bisect)
    return Written(raised)
