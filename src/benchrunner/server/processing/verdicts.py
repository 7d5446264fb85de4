"""What a report's judgment decided, kept to be written in short write transactions
(docs/reference/thresholds.md, "Scale").

The judgment (``evaluation.judge_report``) reads the history and draws every boundary and alert
on a read connection; it records them here as **units**: a metric's boundary (a ``samples``
answer's: the boundaries of a benchmark's iterations) with the alert it raises, if any. A unit
is never split between two writes, so a metric that has its boundary has its alert too.
``verdicts_write`` writes some units in the caller's write transaction after checking that
what the judgment read still holds: each threshold has the model that judged, each measure the
baseline reset it was cut at. When either changed it writes nothing (``Stale``) and the caller
judges the metrics left without a boundary again. A step's alert also checks that no alert
appeared since the read on the points the step could share with another (its ``zone``): a
second report of the same series, judged meanwhile, raised it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from sqlalchemy.engine import Connection

from benchrunner.server.processing.webhooks import emit_alert_event
from benchrunner.server.store import alerts, history, thresholds

WRITE_ROWS = 100
"""Rows one write transaction of a judgment writes at most (a unit bigger than this alone):
a boundary counts one, an alert ``ALERT_ROWS``. 100 rows take a few milliseconds on SQLite
(``benchmarks/RESULTS.md``, "Reports at scale")."""
ALERT_ROWS = 4
"""Rows an alert writes, counted against ``WRITE_ROWS``: the alert, its boundary's lookup, its
webhook event and its bisection's mark."""


@dataclass(frozen=True)
class AlertVerdict:
    """An alert to raise on the boundary of ``metric_id`` (in its unit or stored before)."""

    metric_id: int
    side: alerts.Limit
    change: alerts.Change | None = None
    pending: bool = False
    """Held back for confirmation runs: neither sent to the webhooks nor bisected."""
    bisect: bool = False
    zone: tuple[int, ...] = ()
    """A step's alert: the metrics another alert of the same step could stand on."""
    known: frozenset[int] = frozenset()
    """Those of ``zone`` that carried a step's alert when the judgment read them."""


@dataclass(frozen=True)
class Unit:
    """One metric's verdict (a ``samples`` answer: one benchmark's): written together."""

    threshold_id: int
    boundaries: tuple[alerts.NewBoundary, ...]
    alerts: tuple[AlertVerdict, ...] = ()

    @property
    def rows(self) -> int:
        return len(self.boundaries) + ALERT_ROWS * len(self.alerts)


@dataclass
class Verdicts:
    """A report's judgment: its units in write order, and what they stand on."""

    report_id: int
    scope: history.Scope
    models: dict[int, int] = field(default_factory=dict)
    """Each threshold's model that judged, by threshold id."""
    measures: dict[int, int] = field(default_factory=dict)
    """Each threshold's measure, by threshold id."""
    cutoffs: dict[int, dt.datetime | None] = field(default_factory=dict)
    """Each measure's latest baseline reset when the history was read."""
    units: list[Unit] = field(default_factory=list)

    def judged_by(self, threshold_id: int, model_id: int, measure_id: int) -> None:
        self.models[threshold_id] = model_id
        self.measures[threshold_id] = measure_id

    def add(
        self,
        threshold_id: int,
        boundaries: Sequence[alerts.NewBoundary],
        raised: Sequence[AlertVerdict] = (),
    ) -> None:
        self.units.append(Unit(threshold_id, tuple(boundaries), tuple(raised)))

    def parts(self, rows: int = WRITE_ROWS) -> Iterator[list[Unit]]:
        """The units in writes of at most ``rows`` rows each (a larger unit alone)."""
        part: list[Unit] = []
        size = 0
        for unit in self.units:
            if part and size + unit.rows > rows:
                yield part
                part, size = [], 0
            part.append(unit)
            size += unit.rows
        if part:
            yield part


class Stale(Exception):
    """What a judgment read changed before its write: a threshold's model or a measure's
    baseline reset. Nothing of the write was written."""


@dataclass
class Written:
    """What the writes of a judgment raised."""

    raised: list[int] = field(default_factory=list)
    """Active alerts (sent to the webhooks)."""
    held: list[int] = field(default_factory=list)
    """Alerts held back for confirmation runs."""

    def add(self, other: Written) -> None:
        self.raised += other.raised
        self.held += other.held


def verdicts_write(
    conn: Connection,
    verdicts: Verdicts,
    units: Sequence[Unit],
    now: dt.datetime,
    *,
    check: bool = True,
) -> Written:
    """Write ``units`` of ``verdicts`` in the caller's transaction: boundaries (a metric keeps
    the boundary it has), then alerts (a boundary keeps the alert it has), their webhook events
    and bisections. Raises ``Stale``, having written nothing, when a threshold's model or a
    measure's baseline reset changed since the judgment read them (not checked without
    ``check``: read in this transaction)."""
    written = Written()
    if not units:
        return written
    if check:
        _check(conn, verdicts, sorted({u.threshold_id for u in units}))
    ids = alerts.boundaries_put(conn, [b for u in units for b in u.boundaries])
    boundary_of = dict(zip((b.metric_id for u in units for b in u.boundaries), ids, strict=True))
    to_bisect: list[int] = []
    raising = [a for unit in units for a in unit.alerts]
    for a, alert_id in _alerts_raise(conn, verdicts.report_id, raising, boundary_of, now):
        if alert_id is None:
            continue  # the boundary has one: this report was judged before (a retry)
        if a.pending:
            written.held.append(alert_id)
            continue
        written.raised.append(alert_id)
        if a.bisect:
            to_bisect.append(alert_id)
    emit_alert_event(conn, "alert.raised", written.raised, now)
    # The bisection driver starts their bisections (docs/how-to/bisect.md).
    alerts.alerts_bisect_pending(conn, to_bisect)
    return written


def _alerts_raise(
    conn: Connection,
    report_id: int,
    raising: list[AlertVerdict],
    boundary_of: dict[int, int],
    now: dt.datetime,
) -> Iterator[tuple[AlertVerdict, int | None]]:
    """Each alert of ``raising`` with the id of the alert raised (None: not raised), in order:
    all in one statement when none is a step's (whose check reads the alerts raised before it)
    and no two share a boundary, else one by one."""
    metric_ids = [a.metric_id for a in raising]
    if not any(a.zone for a in raising) and len(set(metric_ids)) == len(metric_ids):
        missing = [m for m in metric_ids if m not in boundary_of]
        boundary_of = {**boundary_of, **alerts.boundary_ids(conn, missing)}
        boundary_ids = [boundary_of[m] for m in metric_ids]
        new = [
            alerts.NewAlert(b, a.side, a.change, a.pending)
            for a, b in zip(raising, boundary_ids, strict=True)
        ]
        raised = alerts.alerts_raise(conn, report_id, new, now)
        yield from ((a, raised.get(b)) for a, b in zip(raising, boundary_ids, strict=True))
        return
    for a in raising:
        if a.zone and alerts.change_alerted(conn, a.zone) - a.known:
            yield a, None  # another report raised this step's alert since the read
            continue
        boundary_id = boundary_of.get(a.metric_id)
        if boundary_id is None:
            boundary_id = alerts.boundary_ids(conn, [a.metric_id])[a.metric_id]
        yield (
            a,
            alerts.alert_raise(
                conn, boundary_id, report_id, a.side, now, a.change, pending=a.pending
            ),
        )


def _check(conn: Connection, verdicts: Verdicts, threshold_ids: list[int]) -> None:
    """Raise ``Stale`` when a threshold's model or a measure's baseline reset is not what the
    judgment read. Where several transactions write at once, the thresholds' rows are held
    first, so a step's check (``AlertVerdict.zone``) sees another report's write, committed."""
    thresholds.lock_thresholds(conn, threshold_ids)
    current = thresholds.current_models(conn, threshold_ids)
    for threshold_id in threshold_ids:
        row = current.get(threshold_id)
        if row is None or row.id != verdicts.models[threshold_id]:
            raise Stale(f"threshold {threshold_id}'s model changed")
    for measure_id in sorted({verdicts.measures[t] for t in threshold_ids}):
        if history.reset_cutoff(conn, verdicts.scope, measure_id) != verdicts.cutoffs[measure_id]:
            raise Stale(f"measure {measure_id}'s baseline was reset")
