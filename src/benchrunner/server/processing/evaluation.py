"""A report's metrics judged against their thresholds (docs/decisions/processing.md): boundaries and
alerts.

``judge_report`` reads the history and draws the boundaries and alerts without writing
(``processing.verdicts``): for a runner job's report on a read connection after the metrics
committed (``processing.judgment``, for a runner job's report and a direct run's alike), written
in short write transactions that re-check what it read. ``evaluate_report`` judges and writes at
once in the caller's transaction: the judgment's own cost, as the tests and benchmarks that
build a judged history use it (benchmarks/RESULTS.md, "Reports at scale").

For each metric: the threshold is the benchmark's override if it has one, else the measure's;
ignored benchmarks are never judged. The history (``store.history``) is cut to the model's
window before the report's start time, to its sample size, and to the latest baseline reset.

- A limit test draws limits from the history, and every judged metric gets a boundary, as in
  Bencher v0.6.12: too few values draw none, and the boundary is then stored with a null
  baseline and null limits (no alert). A value strictly outside a drawn limit raises an alert
  on that side. A metric whose result was named with an ignore suffix
  (``reports.without_ignore_suffix``) gets its boundary all the same but never alerts.
- ``change_point`` looks for steps in the history followed by the new value. A step is one
  alert, on the metric where the series changed, raised once: a step near one already alerted
  (closer to it than to any other step found) is the same step seen again.
- ``samples`` compares the report's samples with its baseline window's
  (``server.processing.sample_evaluation``).
"""

from __future__ import annotations

import datetime as dt
import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Connection

from benchrunner.detection.confirmation import confirm_runs
from benchrunner.detection.models import TestKind, change_point_parameters
from benchrunner.server.processing.sample_evaluation import (
    DEFAULT_MAX_SAMPLE_SIZE,
    judge_samples,
)
from benchrunner.server.processing.statistics_heap import statistics_loaded
from benchrunner.server.processing.verdicts import AlertVerdict, Verdicts, verdicts_write
from benchrunner.server.store import alerts, capabilities, history, reports, thresholds
from benchrunner.server.store.history import Point
from benchrunner.server.store.tables import benchmark

if TYPE_CHECKING:
    from benchrunner.detection.change_point import ChangePoint
    from benchrunner.server.processing.confirmation_duets import Level

# The statistics (SciPy) are imported where a threshold is judged, not here: importing them
# costs about half a second of CPU, which every server start would pay
# (``processing.statistics_heap``).


@dataclass(frozen=True)
class _Judged:
    """One threshold's metrics of the report."""

    threshold: Any
    metrics: list[reports.StoredMetric]


_IGNORED = sa.select(benchmark.c.id).where(
    benchmark.c.id.in_(sa.bindparam("ids", expanding=True)), benchmark.c.ignored.is_(True)
)
_IGNORED_OF_ARRAY = sa.select(benchmark.c.id).where(
    benchmark.c.id == sa.any_(sa.bindparam("ids", type_=postgresql.ARRAY(sa.Integer))),
    benchmark.c.ignored.is_(True),
)
"""``_IGNORED`` with its ids in one array: a report's thousands of benchmarks as as many
parameters cost PostgreSQL far more to bind and plan than the query itself."""


def _ignored(conn: Connection, benchmark_ids: set[int]) -> set[int]:
    if not benchmark_ids:
        return set()
    statement = _IGNORED_OF_ARRAY if capabilities.of(conn).bulk_arrays else _IGNORED
    return set(conn.execute(statement, {"ids": sorted(benchmark_ids)}).scalars())


def _group(
    found: list[Any], metrics: Sequence[reports.StoredMetric], ignored: set[int]
) -> list[_Judged]:
    wide = {t.measure_id: t for t in found if t.benchmark_id is None}
    override = {(t.measure_id, t.benchmark_id): t for t in found if t.benchmark_id is not None}
    groups: dict[int, _Judged] = {}
    for m in metrics:
        if m.benchmark_id in ignored:
            continue
        chosen = override.get((m.measure_id, m.benchmark_id)) or wide.get(m.measure_id)
        if chosen is not None:
            groups.setdefault(chosen.threshold_id, _Judged(chosen, [])).metrics.append(m)
    return list(groups.values())


def threshold_groups(
    conn: Connection, found: list[Any], metrics: Sequence[reports.StoredMetric]
) -> list[tuple[Any, list[reports.StoredMetric]]]:
    """Each threshold of ``found`` with the metrics it judges (ignored benchmarks left out)."""
    ignored = _ignored(conn, {m.benchmark_id for m in metrics})
    return [(g.threshold, g.metrics) for g in _group(found, metrics, ignored)]


def evaluate_report(
    conn: Connection,
    report_id: int,
    metrics: Sequence[reports.StoredMetric],
    now: dt.datetime,
    *,
    found: list[Any],
    noisy: bool = False,
    confirming: bool = False,
    duet_possible: Callable[[Level], bool] = lambda _level: False,
    reads: history.SeriesReads | None = None,
) -> int:
    """Judge the report's newly stored metrics (``judge_report``) and write the verdicts in the
    caller's transaction; returns how many alerts were raised (each queued for the project's
    webhooks, ``server.processing.webhooks``, in this transaction; those held back for
    confirmation runs not counted)."""
    judged = judge_report(
        conn,
        report_id,
        metrics,
        found=found,
        noisy=noisy,
        confirming=confirming,
        duet_possible=duet_possible,
        reads=reads,
    )
    return len(verdicts_write(conn, judged, judged.units, now, check=False).raised)


def judge_report(
    conn: Connection,
    report_id: int,
    metrics: Sequence[reports.StoredMetric],
    *,
    found: list[Any],
    noisy: bool = False,
    confirming: bool = False,
    duet_possible: Callable[[Level], bool] = lambda _level: False,
    reads: history.SeriesReads | None = None,
) -> Verdicts:
    """The verdicts on the report's newly stored metrics, read and drawn without writing
    (``verdicts.verdicts_write`` writes them). On a ``noisy`` report
    (``server.processing.noise``) the boundaries are drawn all the same, but only thresholds
    with ``alert_when_noisy`` raise alerts. ``found``: the thresholds of the metrics' measures
    on the report's branch and testbed (``series_thresholds_to_judge``; none: nothing to
    judge). ``confirming`` (a runner job's report): a threshold with confirmation runs holds
    its alerts back as ``pending`` (``server.processing.confirmations``). ``duet_possible``:
    whether the confirmation could run as a duet (``samples`` asks, ``judge_samples``).
    ``reads``: the histories read are kept there for the report's look-back
    (``processing.look_back``)."""
    row = reports.report_row(conn, report_id)
    scope = history.scope_of(row)
    verdicts = Verdicts(report_id, scope)
    if not found:
        return verdicts
    statistics_loaded()
    ignored = _ignored(conn, {m.benchmark_id for m in metrics})
    groups = _group(found, metrics, ignored)
    reads = history.SeriesReads() if reads is None else reads
    wanted = _read_histories(conn, row, groups, reads, verdicts.cutoffs)
    histories = [history.wanted_history(conn, scope, w, reads) for w in wanted]
    steps = _change_points_together(groups, histories)
    for judged, series in zip(groups, histories, strict=True):
        t = judged.threshold
        verdicts.judged_by(t.threshold_id, t.id, t.measure_id)
        alerting = not noisy or bool(t.alert_when_noisy)
        # held back: their confirmation raises them (and asks for the bisection)
        pending = confirming and confirm_runs(t.confirm) > 0
        bisect = bool(t.bisect) and not pending
        test = thresholds.model_of(t).test
        if test is TestKind.SAMPLES:
            judge_samples(
                conn,
                verdicts,
                t,
                judged.metrics,
                series,
                alerting,
                pending=pending,
                bisect=bisect,
                duet_possible=duet_possible,
            )
        elif test is not TestKind.CHANGE_POINT:
            _judge_limits(verdicts, t, judged.metrics, series, alerting, pending, bisect)
        else:
            for m in judged.metrics:
                past = series[m.benchmark_id].points()
                _judge_changes(
                    conn, verdicts, t, report_id, m, past, steps[m.id], alerting, pending, bisect
                )
    return verdicts


def threshold_series(
    conn: Connection,
    row: Any,
    t: Any,
    benchmark_ids: set[int],
    cutoff: dt.datetime | None,
    points_per_run: int = 1,
    reads: history.SeriesReads | None = None,
) -> dict[int, history.Series]:
    """The history of the benchmarks of report ``row`` (``reports.report_row``) that threshold
    ``t`` judges against, cut to its window, sample size and the latest baseline reset
    (``cutoff``: ``history.reset_cutoff``). The ``samples`` test's sample size counts runs
    (reports), so it reads ``points_per_run`` (the judged report's iterations) points per run
    and one run more, which ``sample_evaluation`` cuts to whole runs."""
    wanted = threshold_wanted(row, t, benchmark_ids, cutoff, points_per_run)
    return history.wanted_history(conn, history.scope_of(row), wanted, reads)


def threshold_wanted(
    row: Any, t: Any, benchmark_ids: set[int], cutoff: dt.datetime | None, points_per_run: int = 1
) -> history.Wanted:
    """The history ``threshold_series`` reads."""
    test = thresholds.model_of(t).test
    max_samples = t.max_sample_size
    if test is TestKind.SAMPLES:
        runs = DEFAULT_MAX_SAMPLE_SIZE if max_samples is None else max_samples
        max_samples = (runs + 1) * max(1, points_per_run)
    since = history_since(row.start_time, t.window_seconds, cutoff)
    return history.Wanted(t.measure_id, sorted(benchmark_ids), since, max_samples)


def _read_histories(
    conn: Connection,
    row: Any,
    groups: list[_Judged],
    reads: history.SeriesReads,
    cutoffs: dict[int, dt.datetime | None],
) -> list[history.Wanted]:
    """The history each threshold of the report judges against (``threshold_wanted``), read
    together into ``reads`` (``history.read_together``) before any is judged; each measure's
    latest baseline reset into ``cutoffs``."""
    scope = history.scope_of(row)
    wanted: list[history.Wanted] = []
    for judged in groups:
        t = judged.threshold
        if t.measure_id not in cutoffs:
            cutoffs[t.measure_id] = history.reset_cutoff(conn, scope, t.measure_id)
        per_benchmark = Counter(m.benchmark_id for m in judged.metrics)
        points = max(per_benchmark.values(), default=1)
        wanted.append(threshold_wanted(row, t, set(per_benchmark), cutoffs[t.measure_id], points))
    history.read_together(conn, scope, wanted, reads)
    return wanted


def _change_points_together(
    groups: list[_Judged], histories: list[dict[int, history.Series]]
) -> dict[int, list[ChangePoint]]:
    """The change points of every metric the ``change_point`` test judges (its history followed
    by its value), by metric id: found by ``change_points_many`` for all the metrics of the
    report whose thresholds share the detector's parameters at once, as the look-back finds
    them (``processing.look_back``). A series' answer does not depend on those found with it."""
    together: dict[tuple[float, float], list[tuple[int, list[float]]]] = {}
    for judged, series in zip(groups, histories, strict=True):
        t = judged.threshold
        if thresholds.model_of(t).test is not TestKind.CHANGE_POINT:
            continue
        parameters = change_point_parameters(t.max_pvalue, t.min_magnitude)
        for m in judged.metrics:
            values = [*series[m.benchmark_id].values, m.value]
            together.setdefault(parameters, []).append((m.id, values))
    if not together:
        return {}
    from benchrunner.detection.change_point import change_points_many

    steps: dict[int, list[ChangePoint]] = {}
    for (max_pvalue, min_magnitude), metrics in together.items():
        found = change_points_many(
            [values for _, values in metrics], max_pvalue=max_pvalue, min_magnitude=min_magnitude
        )
        steps.update((metric_id, f) for (metric_id, _), f in zip(metrics, found, strict=True))
    return steps


def series_thresholds_to_judge(
    conn: Connection, branch_id: int, testbed_id: int, metrics: Sequence[reports.StoredMetric]
) -> list[Any]:
    """The thresholds (with their current models) of the measures of ``metrics`` on a
    report's branch and testbed, without reading the report (cached:
    ``thresholds.thresholds_of_series``): none means there is nothing to judge."""
    return thresholds.thresholds_of_series(
        conn, branch_id, testbed_id, {m.measure_id for m in metrics}
    )


def history_since(
    start: dt.datetime, window: int | None, reset: dt.datetime | None
) -> dt.datetime | None:
    bounds = [b for b in (reset, start - dt.timedelta(seconds=window) if window else None) if b]
    return max(bounds) if bounds else None


def _judge_limits(
    verdicts: Verdicts,
    t: Any,
    metrics: list[reports.StoredMetric],
    series: dict[int, history.Series],
    alerting: bool,
    pending: bool = False,
    bisect: bool = False,
) -> None:
    """Each metric's limits from its series, into ``verdicts``: a metric whose history draws
    no limits gets a null baseline and null limits. Without ``alerting``, nothing is raised;
    with ``pending``, the alerts are held back."""
    from benchrunner.detection.boundary import Limits, limits_many, outside

    model = thresholds.model_of(t)
    undrawn = Limits(None, None, None)
    found = limits_many(model, [series[m.benchmark_id].values for m in metrics])
    for m, d in zip(metrics, found, strict=True):
        d = d or undrawn
        drawn = alerts.NewBoundary(
            m.id, t.threshold_id, t.id, d.baseline, d.lower_limit, d.upper_limit
        )
        side = None if not alerting or m.never_alerts else outside(d, m.value)
        if side is None:
            verdicts.add(t.threshold_id, [drawn])
        else:
            alert = AlertVerdict(m.id, side, pending=pending, bisect=bisect)
            verdicts.add(t.threshold_id, [drawn], [alert])


def finite_mean(values: list[float]) -> float:
    """The mean of finite values, finite however large they are: ``statistics.fmean`` raises
    OverflowError on a sum past the largest float (1.7e308 twice), and NumPy's mean is inf."""
    count = len(values)
    return math.fsum(v / count for v in values)


def _judge_changes(
    conn: Connection,
    verdicts: Verdicts,
    t: Any,
    report_id: int,
    m: reports.StoredMetric,
    past: list[Point],
    found: list[ChangePoint],
    alerting: bool,
    pending: bool = False,
    bisect: bool = False,
) -> None:
    """Metric ``m`` after its ``past``, whose change points (``_change_points_together``)
    are ``found``, into ``verdicts``."""
    points = [*past, Point(m.id, m.value, report_id)]
    segment_start = found[-1].index if found else 0
    level = finite_mean([p.value for p in points[segment_start:]])
    boundaries = [alerts.NewBoundary(m.id, t.threshold_id, t.id, level, None, None)]
    if not found or not alerting or m.never_alerts:
        # a step kept back now is raised by a later report that may alert
        verdicts.add(t.threshold_id, boundaries)
        return
    alerted = alerts.change_alerted(conn, [p.metric_id for p in points])
    alerted_at = [i for i, p in enumerate(points) if p.metric_id in alerted]
    raised: list[AlertVerdict] = []
    for k, change in enumerate(found):
        if already_alerted(found, k, alerted_at):
            continue
        where = points[change.index]
        if all(b.metric_id != where.metric_id for b in boundaries):  # a metric keeps its first
            boundaries.append(
                alerts.NewBoundary(where.metric_id, t.threshold_id, t.id, change.before, None, None)
            )
        side: alerts.Limit = "upper" if change.after > change.before else "lower"
        since = points[change.index - 1].report_id if change.index > 0 else None
        step = alerts.Change(change.before, change.after, change.magnitude, change.pvalue, since)
        zone = tuple(points[i].metric_id for i in step_zone(found, k, len(points)))
        raised.append(AlertVerdict(where.metric_id, side, step, pending, bisect, zone))
    verdicts.add(t.threshold_id, boundaries, raised)


def already_alerted(found: list[ChangePoint], k: int, alerted_at: list[int]) -> bool:
    """Whether an alerted index lies nearer to step ``k`` than to its neighbouring steps."""
    here = found[k].index
    low = (found[k - 1].index + here) / 2 if k > 0 else -1
    high = (here + found[k + 1].index) / 2 if k + 1 < len(found) else float("inf")
    return any(low < i < high for i in alerted_at)


def step_zone(found: list[ChangePoint], k: int, length: int) -> range:
    """The indexes (of ``length`` points) nearer to step ``k`` than to its neighbouring steps:
    an alert on any of them is the step's (``already_alerted``)."""
    here = found[k].index
    low = math.floor((found[k - 1].index + here) / 2) + 1 if k > 0 else 0
    high = math.ceil((here + found[k + 1].index) / 2) if k + 1 < len(found) else length
    return range(low, min(high, length))
