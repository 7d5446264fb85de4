"""Change points that look back (docs/how-to/thresholds-alerts.md#change-points-that-look-back).

After a report's thresholds are judged, the change-point detector runs again over the newest
``WINDOW`` points of each of its metrics' series (``detection.look_back``): a step that began at
an earlier report and has no alert yet raises one alert on the metric where it began, saying
between which versions; a dismissed step that persisted is re-opened. Both are sent to the
webhooks as ``alert.raised``.

A point whose report the noise guard found noisy is left out of the series unless the threshold
has ``alert_when_noisy``: its thresholds did not judge it, and a step the look-back found there
would raise the alert the guard held back.

Which series: those of the branch named ``WATCHED_BRANCH`` (where a run without a branch
goes), under any threshold; on any other branch, only those under a ``change_point`` threshold.
A threshold's own ``change_point`` parameters are used; other tests use the detector's defaults.

Runs after the thresholds are judged. For a runner job's report, after its processing
committed (in the processor, after the batch's write; for a report processed by the channel
after the runner's ``ack``, after that write): ``look_back_later`` reads the series and runs the
detector in a read unit, outside any write transaction, then writes what it found in write
transactions of at most ``WRITE_ROWS`` alerts each, re-checking there what must still hold
(``look_back_write``). A direct run's report is looked back on the same way, after its
judgment (``judgment.judge_later``), before its answer. Bounded: per threshold,
one history read of ``WINDOW`` points per benchmark (none when the evaluation read at least
as many: ``history.SeriesReads``), one read of those points' reports and one of the alerts on
them (``store.look_back``); per metric, one detector run over ``WINDOW`` points.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.detection.change_point import ChangePoint, change_points_many
from benchrunner.detection.look_back import Known, Raise, Reopen, look_back
from benchrunner.detection.models import TestKind, change_point_parameters
from benchrunner.server.processing.evaluation import history_since, threshold_groups
from benchrunner.server.processing.webhooks import emit_alert_event
from benchrunner.server.store import alerts, history, reports, thresholds
from benchrunner.server.store.engine import Database
from benchrunner.server.store.look_back import PointsFacts, points_facts
from benchrunner.server.store.tables import alert, boundary
from benchrunner.server.submission.body import DEFAULT_BRANCH

log = logging.getLogger(__name__)

WINDOW = 60
"""The newest points of a series the look-back judges (the report's own included): two of the
detector's 30-point windows."""
WATCHED_BRANCH = DEFAULT_BRANCH
"""The branch looked back on under every threshold."""


WRITE_ROWS = 10
"""Alerts one write transaction of a look-back raises or re-opens at most (a few statements
each: a boundary, an alert, its webhook event). The look-back reads and runs its detector
outside any write transaction (``look_back_plan``), then writes what it found in transactions
of at most this many (``look_back_write``), so on SQLite it holds the single writer for a few
milliseconds at a time, not for its whole length."""


@dataclass(frozen=True)
class Planned:
    """An alert the look-back found to raise or re-open, and what must still hold when it is
    written (``look_back_write``): the threshold still has the model that judged, and, for a
    step, no alert has appeared since the read on a point it could belong to."""

    threshold_id: int
    model_id: int
    bisect: bool
    action: Raise | Reopen
    where: int = 0
    """A step's: the metric where it began."""
    since: int = 0
    """A step's: the last report before it."""
    zone: tuple[int, ...] = ()
    """A step's: the metrics an alert of the step could stand on (``detection.look_back``'s
    rule of belonging)."""
    known: frozenset[int] = frozenset()
    """The alerts on ``zone`` when it was read."""


@dataclass(frozen=True)
class LookBackLater:
    """A report's look-back left for after its job's processing: the job is acknowledged
    first, then processed, and the look-back runs after it (``look_back_later``), on
    the history its evaluation read (``reads``): a report processed in between is judged by
    its own look-back, which sees this one."""

    report_id: int
    metrics: tuple[reports.StoredMetric, ...]
    noisy: bool
    found: list[Any]
    reads: history.SeriesReads | None = None
    """The histories its evaluation read."""

    def plan(self, conn: Connection) -> list[Planned]:
        return look_back_plan(
            conn,
            self.report_id,
            self.metrics,
            noisy=self.noisy,
            found=self.found,
            reads=self.reads,
        )


async def look_back_later(db: Database, later: LookBackLater, now: dt.datetime) -> int:
    """``later``'s look-back: read and judged in a read unit on a reader thread (off the
    event loop, on SQLite too), written ``WRITE_ROWS`` alerts a write transaction, the event
    loop running in between; how many alerts were raised or re-opened."""
    planned = await db.read_apart(later.plan)
    done = 0
    for start in range(0, len(planned), WRITE_ROWS):
        if start:
            await asyncio.sleep(0)  # an inline write does not yield by itself
        chunk = planned[start : start + WRITE_ROWS]
        done += await db.write(look_back_write, later.report_id, chunk, now)
    return done


def look_back_plan(
    conn: Connection,
    report_id: int,
    metrics: Sequence[reports.StoredMetric],
    *,
    found: list[Any],
    noisy: bool = False,
    reads: history.SeriesReads | None = None,
) -> list[Planned]:
    """What the look-back over the report's series would raise and re-open: reads only, so it
    runs on a read connection. On a ``noisy`` report only thresholds with ``alert_when_noisy``
    look back. ``found``: the thresholds the report's judgment judged with
    (``evaluation.series_thresholds_to_judge``; none: nothing to look back over). ``reads``:
    the histories the judgment read, whose series are not read again. A failure is logged,
    and plans nothing."""
    if not metrics or not found:
        return []
    try:
        return _plan(conn, report_id, metrics, noisy, found, reads)
    except Exception:  # a bug here must not undo (or fail) the report's own processing
        log.exception("looking back over report %s's series failed", report_id)
        return []


_ALERTS_ON = (
    sa.select(alert.c.id)
    .join(boundary, boundary.c.id == alert.c.boundary_id)
    .where(
        boundary.c.metric_id.in_(sa.bindparam("metric_ids", expanding=True)),
        alert.c.report_id != sa.bindparam("report_id"),  # not this look-back's own
    )
)


def look_back_write(
    conn: Connection, report_id: int, planned: Sequence[Planned], now: dt.datetime
) -> int:
    """Raise and re-open the ``planned`` alerts (of ``report_id``'s look-back) that still
    hold: a threshold whose model changed since the read raises nothing (its next report's
    look-back judges with the new one); a step on whose points an alert appeared since the
    read (another report's look-back raised it) raises no second one; a re-opened alert must
    still be dismissed and not triaged ``expected``. How many were raised or re-opened."""
    if not planned:
        return 0
    threshold_ids = sorted({p.threshold_id for p in planned})
    thresholds.lock_thresholds(conn, threshold_ids)  # one look-back's write at a time
    current = thresholds.current_models(conn, threshold_ids)
    raised: list[int] = []
    reopened: list[int] = []
    to_bisect: list[int] = []
    for p in planned:
        model_row = current.get(p.threshold_id)
        if model_row is None or model_row.id != p.model_id:
            continue
        if isinstance(p.action, Reopen):
            if alerts.alert_reopen(conn, p.action.alert_id, now):
                reopened.append(p.action.alert_id)
            continue
        params = {"metric_ids": list(p.zone), "report_id": report_id}
        appeared = set(conn.execute(_ALERTS_ON, params).scalars())
        if appeared - p.known:
            continue
        alert_id = _raise(conn, p, report_id, now)
        if alert_id is not None:
            raised.append(alert_id)
            if p.bisect:
                to_bisect.append(alert_id)
    emit_alert_event(conn, "alert.raised", [*raised, *reopened], now)
    alerts.alerts_bisect_pending(conn, to_bisect)
    return len(raised) + len(reopened)


def _plan(
    conn: Connection,
    report_id: int,
    metrics: Sequence[reports.StoredMetric],
    noisy: bool,
    found: list[Any],
    reads: history.SeriesReads | None,
) -> list[Planned]:
    row = reports.report_row(conn, report_id)
    scope = history.scope_of(row)
    watched = row.branch_name == WATCHED_BRANCH
    planned: list[Planned] = []
    for t, judged in threshold_groups(conn, found, metrics):
        change_test = thresholds.model_of(t).test is TestKind.CHANGE_POINT
        if not (watched or change_test) or (noisy and not t.alert_when_noisy):
            continue
        # of a report's iterations, the last stored is the series' newest point
        newest = {m.benchmark_id: m for m in judged if not m.never_alerts}
        if not newest:
            continue
        # the report's own points of each benchmark (its iterations): an alert on any of them
        # is the report's, on the newest point
        own: dict[int, history.Series] = {}
        for m in judged:
            own.setdefault(m.benchmark_id, history.Series()).append(m.id, m.value, report_id)
        cutoff = history.reset_cutoff(conn, scope, t.measure_id)
        series = history.series_history(
            conn,
            scope,
            t.measure_id,
            sorted(newest),
            since=history_since(row.start_time, t.window_seconds, cutoff),
            max_samples=WINDOW - 1,
            reads=reads,
        )
        facts = points_facts(conn, t.measure_id, {b: (series[b], own[b]) for b in newest})
        max_pvalue = t.max_pvalue if change_test and t.max_pvalue is not None else None
        min_magnitude = t.min_magnitude if change_test and t.min_magnitude is not None else None
        pvalue, magnitude = change_point_parameters(max_pvalue, min_magnitude)
        judged_points: dict[int, history.Series] = {}
        noisy_reports = (
            set()
            if t.alert_when_noisy
            else {r for r, report_facts in facts.reports.items() if report_facts.noisy}
        )
        for benchmark_id, m in newest.items():
            points = series[benchmark_id].newest(None)
            points.append(m.id, m.value, report_id)
            if not t.alert_when_noisy:  # a value the noise guard did not judge is no evidence
                points = _judged(points, noisy_reports)
            judged_points[benchmark_id] = points
        # the detector over all of the threshold's series at once
        steps = change_points_many(
            [p.values for p in judged_points.values()], max_pvalue=pvalue, min_magnitude=magnitude
        )
        for (benchmark_id, points), found_steps in zip(judged_points.items(), steps, strict=True):
            numbers = _report_numbers(points.report_ids)
            actions = look_back(
                points.values,
                _known(points, facts, own[benchmark_id].metric_ids),
                found_steps,
                reports=numbers,
            )
            for action in actions:
                if isinstance(action, Reopen):
                    planned.append(Planned(t.threshold_id, t.id, bool(t.bisect), action))
                    continue
                zone = _zone(found_steps, action.change, numbers, points.metric_ids)
                planned.append(
                    Planned(
                        t.threshold_id,
                        t.id,
                        bool(t.bisect),
                        action,
                        where=points.metric_ids[action.change.index],
                        since=points.report_ids[action.change.index - 1],
                        zone=zone,
                        known=frozenset(
                            facts.alerts[m].alert_id for m in zone if m in facts.alerts
                        ),
                    )
                )
    return planned


def _zone(
    found: list[ChangePoint], step: ChangePoint, numbers: list[int], metric_ids: list[int]
) -> tuple[int, ...]:
    """The metrics an alert of ``step`` could stand on: a change point's between the steps
    around it, a threshold's on the step's report or one next to it."""
    k = next(i for i, c in enumerate(found) if c.index == step.index)
    low = (found[k - 1].index + step.index) / 2 if k > 0 else -1
    high = (step.index + found[k + 1].index) / 2 if k + 1 < len(found) else float("inf")
    return tuple(
        m
        for i, m in enumerate(metric_ids)
        if low < i < high or abs(numbers[i] - numbers[step.index]) <= 1
    )


def _judged(points: history.Series, noisy: set[int]) -> history.Series:
    """The points whose report the noise guard did not find ``noisy``."""
    if noisy.isdisjoint(points.report_ids):
        return points
    kept = [i for i, r in enumerate(points.report_ids) if r not in noisy]
    return history.Series(
        [points.metric_ids[i] for i in kept],
        [points.values[i] for i in kept],
        [points.report_ids[i] for i in kept],
    )


def _report_numbers(report_ids: list[int]) -> list[int]:
    """Each point's report as a number that rises by one from a report to the next: the
    iterations of one report are points side by side, and share it."""
    numbers: list[int] = []
    number, previous = -1, None
    for report_id in report_ids:
        if report_id != previous:
            number, previous = number + 1, report_id
        numbers.append(number)
    return numbers


def _known(points: history.Series, facts: PointsFacts, own: list[int]) -> list[Known]:
    """The alerts on the points, and those on the judged report's other iterations (``own``:
    its metrics of the benchmark), which stand on its point, the newest; a suspected one (its
    confirmation runs did not agree) does not count, and one triaged ``expected`` never
    re-opens."""
    known: list[Known] = []
    for index, point in enumerate(points.metric_ids):
        on = [point]
        if point in own:
            on += [metric_id for metric_id in own if metric_id != point]
        elif point not in facts.alerts:
            continue  # most points: no alert on them
        for a in (facts.alerts[metric_id] for metric_id in on if metric_id in facts.alerts):
            if a.status == "suspected":
                continue
            dismissed = a.status == "dismissed" and a.verdict != "expected"
            after = len(points)
            if dismissed:
                stored = (facts.reports[r].stored for r in points.report_ids)
                after = next((j for j, s in enumerate(stored) if s > a.modified), len(points))
            known.append(Known(a.alert_id, index, a.change, dismissed, after))
    return known


def _raise(conn: Connection, p: Planned, report_id: int, now: dt.datetime) -> int | None:
    """One alert on the metric where the step began, raised by ``report_id``: a new one, or
    the suspected alert its boundary holds (one alert a boundary), made active."""
    assert isinstance(p.action, Raise)
    change = p.action.change
    boundary_id = alerts.boundary_put(
        conn, p.where, p.threshold_id, p.model_id, change.before, None, None
    )
    side: alerts.Limit = "upper" if change.after > change.before else "lower"
    step = alerts.Change(change.before, change.after, change.magnitude, change.pvalue, p.since)
    raised = alerts.alert_raise(conn, boundary_id, report_id, side, now, step)
    if raised is None:
        raised = alerts.alert_promote_suspected(conn, boundary_id, report_id, side, now, step)
    return raised
