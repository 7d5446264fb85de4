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

Runs after the thresholds are judged: in the processor's transaction for a runner job's
report; for a report processed with its result in the channel, after the runner's ``ack``, in a
transaction of its own (``LookBackLater``); and in the request for a direct run; in a savepoint
of its own, so a failure here leaves the report's evaluation standing. Bounded: per threshold,
one history read of ``WINDOW`` points per benchmark (none when the evaluation read at least
as many: ``history.SeriesReads``), one read of those points' reports and one of the alerts on
them (``store.look_back``); per metric, one detector run over ``WINDOW`` points.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Connection

from benchrunner.detection.change_point import change_points_many
from benchrunner.detection.look_back import Known, Raise, Reopen, look_back
from benchrunner.detection.models import DEFAULT_MAX_PVALUE, DEFAULT_MIN_MAGNITUDE, TestKind
from benchrunner.server.processing.evaluation import (
    history_since,
    threshold_groups,
    thresholds_to_judge,
)
from benchrunner.server.processing.webhooks import emit_alert_event
from benchrunner.server.store import alerts, history, reports, thresholds
from benchrunner.server.store.look_back import PointsFacts, points_facts
from benchrunner.server.submission.body import DEFAULT_BRANCH

log = logging.getLogger(__name__)

WINDOW = 60
"""The newest points of a series the look-back judges (the report's own included): two of the
detector's 30-point windows."""
WATCHED_BRANCH = DEFAULT_BRANCH
"""The branch looked back on under every threshold."""


@dataclass(frozen=True)
class LookBackLater:
    """A report's look-back left for after its runner's ``ack``: a job processed with its
    result is acknowledged first, and the look-back runs in a transaction of its own, on the
    history its evaluation read (``reads``): a report processed in between is judged by its
    own look-back, which sees this one."""

    report_id: int
    metrics: tuple[reports.StoredMetric, ...]
    noisy: bool
    found: list[Any]
    reads: history.SeriesReads | None = None
    """The histories its evaluation read."""

    def run(self, conn: Connection, now: dt.datetime) -> int:
        return look_back_report(
            conn,
            self.report_id,
            self.metrics,
            now,
            noisy=self.noisy,
            found=self.found,
            reads=self.reads,
        )


def look_back_report(
    conn: Connection,
    report_id: int,
    metrics: Sequence[reports.StoredMetric],
    now: dt.datetime,
    *,
    noisy: bool = False,
    found: list[Any] | None = None,
    reads: history.SeriesReads | None = None,
) -> int:
    """Look back over the series of the report's newly judged metrics; how many alerts were
    raised or re-opened. On a ``noisy`` report only thresholds with ``alert_when_noisy`` look
    back. ``found``: ``evaluation.thresholds_to_judge`` when the caller has read it.
    ``reads``: the histories the report's evaluation read (``evaluate_report``), whose
    series are not read again."""
    if not metrics:
        return 0
    if found is None:
        found = thresholds_to_judge(conn, report_id, metrics)
    if not found:
        return 0
    try:
        with conn.begin_nested():
            return _look_back(conn, report_id, metrics, now, noisy, found, reads)
    except Exception:  # a bug here must not undo the report's own evaluation
        log.exception("looking back over report %s's series failed", report_id)
        return 0


def _look_back(
    conn: Connection,
    report_id: int,
    metrics: Sequence[reports.StoredMetric],
    now: dt.datetime,
    noisy: bool,
    found: list[Any],
    reads: history.SeriesReads | None,
) -> int:
    row = reports.report_row(conn, report_id)
    scope = history.scope_of(row)
    watched = row.branch_name == WATCHED_BRANCH
    raised: list[int] = []
    reopened: list[int] = []
    to_bisect: list[int] = []
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
        pvalue = DEFAULT_MAX_PVALUE if max_pvalue is None else max_pvalue
        magnitude = DEFAULT_MIN_MAGNITUDE if min_magnitude is None else min_magnitude
        judged_points: dict[int, history.Series] = {}
        for benchmark_id, m in newest.items():
            points = series[benchmark_id].newest(None)
            points.append(m.id, m.value, report_id)
            if not t.alert_when_noisy:  # a value the noise guard did not judge is no evidence
                points = _judged(points, facts)
            judged_points[benchmark_id] = points
        # the detector over all of the threshold's series at once (the same answers)
        steps = change_points_many(
            [p.values for p in judged_points.values()], max_pvalue=pvalue, min_magnitude=magnitude
        )
        for (benchmark_id, points), found_steps in zip(
            judged_points.items(), steps, strict=True
        ):
            actions = look_back(
                points.values,
                _known(points, facts, own[benchmark_id].metric_ids),
                max_pvalue=pvalue,
                min_magnitude=magnitude,
                reports=_report_numbers(points.report_ids),
                found=found_steps,
            )
            for action in actions:
                if isinstance(action, Reopen):
                    if alerts.alert_reopen(conn, action.alert_id, now):
                        reopened.append(action.alert_id)
                    continue
                alert_id = _raise(conn, t, report_id, points, action, now)
                if alert_id is not None:
                    raised.append(alert_id)
                    if t.bisect:
                        to_bisect.append(alert_id)
    emit_alert_event(conn, "alert.raised", [*raised, *reopened], now)
    alerts.alerts_bisect_pending(conn, to_bisect)
    return len(raised) + len(reopened)


def _judged(points: history.Series, facts: PointsFacts) -> history.Series:
    """The points whose report the noise guard did not find noisy."""
    noisy = {r for r in set(points.report_ids) if facts.reports[r].noisy}
    if not noisy:
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


def _raise(
    conn: Connection,
    t: Any,
    report_id: int,
    points: history.Series,
    action: Raise,
    now: dt.datetime,
) -> int | None:
    """One alert on the metric where the step began, raised by ``report_id``: a new one, or
    the suspected alert its boundary holds (one alert a boundary), made active."""
    change = action.change
    where = points.metric_ids[change.index]
    since = points.report_ids[change.index - 1]
    boundary_id = alerts.boundary_put(conn, where, t.threshold_id, t.id, change.before, None, None)
    side: alerts.Limit = "upper" if change.after > change.before else "lower"
    step = alerts.Change(change.before, change.after, change.magnitude, change.pvalue, since)
    raised = alerts.alert_raise(conn, boundary_id, report_id, side, now, step)
    if raised is None:
        raised = alerts.alert_promote_suspected(conn, boundary_id, report_id, side, now, step)
    return raised
