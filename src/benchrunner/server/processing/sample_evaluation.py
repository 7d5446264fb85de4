"""The ``samples`` threshold test on a report (docs/reference/thresholds.md): the report's
samples of each benchmark against those of its baseline window, run by run.

The baseline window is the benchmark's history (``store.history``: same branch with its start
point, testbed and measure, cut to the model's window, sample size and the latest baseline
reset), with one more cut: it starts at the latest report this test alerted on. So a step
alerts once: the reports after it are compared with the new level, not with the old one.

Every judged metric gets a boundary whose baseline is the median of the window's run medians and
whose ``verdict`` is the test's answer (both none when the window holds fewer than
``min_sample_size`` values); a **different** verdict raises one alert per benchmark, on the
report's first metric of it (of the run before it, when that run was judged with it: the step
began there), carrying the medians, the relative shift and the rank test's p-value. **same**
and **unknown** raise nothing. Each of the window's reports is a run (its metrics' samples
together), and so are the report's metrics of a benchmark.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy.engine import Connection

from benchrunner.core.samples import Samples
from benchrunner.detection.models import SAMPLES_MAX_PVALUE, SAMPLES_MIN_MAGNITUDE
from benchrunner.server.processing.confirmation_duets import Level
from benchrunner.server.processing.verdicts import AlertVerdict, Verdicts
from benchrunner.server.store import alerts, reports
from benchrunner.server.store.history import Point, Series
from benchrunner.server.store.samples import samples_of

DEFAULT_MAX_SAMPLE_SIZE = 64
"""The newest values of the history a ``samples`` model without ``max_sample_size`` uses."""


def judge_samples(
    conn: Connection,
    verdicts: Verdicts,
    t: Any,
    metrics: list[reports.StoredMetric],
    series: dict[int, Series],
    alerting: bool,
    *,
    pending: bool = False,
    bisect: bool = False,
    duet_possible: Callable[[Level], bool] = lambda _level: False,
) -> None:
    """Boundaries for ``metrics`` (a report's, of one threshold) and the alerts to raise, into
    ``verdicts`` (read only: ``conn`` may be a read connection); without ``alerting`` (a noisy
    report), no alerts. With ``pending`` (confirmation runs will re-measure),
    the alerts are held back, and an **unknown** answer holds one back too when the re-runs
    may settle it: when the report is beyond the limit (one more run tells), or when its shift
    passes half of ``min_magnitude`` (and is not 0) but not the window's run-to-run spread and the
    confirmation can be a duet against a version at the old level (``duet_possible``, asked
    only then): plain re-runs would meet the same spread,
    while a duet's rounds, interleaved with the version before, do not."""
    from benchrunner.detection.samples import compare

    by_benchmark: dict[int, list[reports.StoredMetric]] = {}
    for m in metrics:
        by_benchmark.setdefault(m.benchmark_id, []).append(m)
    windows = {b: _window(conn, series[b].points()) for b in by_benchmark}
    wanted = [(p.metric_id, p.value) for points in windows.values() for p in points]
    wanted += [(m.id, m.value) for m in metrics]
    found = samples_of(conn, wanted)
    report_of = {p.metric_id: p.report_id for points in windows.values() for p in points}
    min_effect = SAMPLES_MIN_MAGNITUDE if t.min_magnitude is None else t.min_magnitude
    for benchmark_id, judged in by_benchmark.items():
        before, firsts = _newest_runs(t, *_runs(windows[benchmark_id], found, report_of))
        after = [[v for m in judged for v in found[m.id].values]]
        enough = bool(before) and (t.min_sample_size is None or len(before) >= t.min_sample_size)
        result = (
            compare(
                before,
                after,
                max_pvalue=SAMPLES_MAX_PVALUE if t.max_pvalue is None else t.max_pvalue,
                min_effect=min_effect,
            )
            if enough
            else None
        )
        baseline = None if result is None else result.baseline
        verdict = None if result is None else result.verdict.value
        boundaries = [
            alerts.NewBoundary(m.id, t.threshold_id, t.id, baseline, None, None, verdict)
            for m in judged
        ]
        raised = _alert(
            conn,
            t,
            result,
            judged,
            firsts,
            windows[benchmark_id],
            duet_possible,
            alerting=alerting,
            pending=pending,
            bisect=bisect,
            min_effect=min_effect,
        )
        if raised is not None and raised.metric_id != judged[0].id:
            boundaries.append(
                alerts.NewBoundary(raised.metric_id, t.threshold_id, t.id, baseline, None, None)
            )
        verdicts.add(t.threshold_id, boundaries, [] if raised is None else [raised])


def _alert(
    conn: Connection,
    t: Any,
    result: Any,
    judged: list[reports.StoredMetric],
    firsts: list[int],
    window: list[Point],
    duet_possible: Callable[[Level], bool],
    *,
    alerting: bool,
    pending: bool,
    bisect: bool,
    min_effect: float,
) -> AlertVerdict | None:
    """The alert a benchmark's answer raises, if any: on its report's first metric, or where
    the step began (a borrowed run's); its zone is the window's points, on which an alert
    raised since the read would have moved the window."""
    from benchrunner.detection.samples import Verdict

    if result is None or not alerting or any(m.never_alerts for m in judged):
        return None
    benchmark_id = judged[0].benchmark_id
    step = samples_step(result)
    if result.verdict is not Verdict.DIFFERENT and not (
        pending
        and result.verdict is Verdict.UNKNOWN
        and (result.beyond or _duet_tells(result, min_effect, benchmark_id, t, duet_possible))
    ):
        return None
    if step is None:
        return None
    side: alerts.Limit = "upper" if step.magnitude > 0 else "lower"
    where = judged[0].id
    if result.verdict is Verdict.DIFFERENT and result.borrowed:
        # The step began at the first run judged with the report: the alert goes there,
        # as a change point's does (and as the look-back expects of a step's alert).
        where = firsts[len(firsts) - result.borrowed]
    zone = tuple(p.metric_id for p in window)
    known = frozenset(alerts.change_alerted(conn, zone))
    return AlertVerdict(where, side, step, pending, bisect, zone, known)


def _duet_tells(
    result: Any,
    min_effect: float,
    benchmark_id: int,
    t: Any,
    duet_possible: Callable[[Level], bool],
) -> bool:
    """Whether an **unknown** answer whose shift passes half of ``min_effect`` (and is not 0)
    but not the spread may be settled by a duet against a version at the old level."""
    if not result.shift or result.baseline is None or result.new is None:
        return False
    if abs(result.shift) < min_effect / 2:
        return False
    return duet_possible(Level(benchmark_id, t.measure_id, result.baseline, result.new))


def _window(conn: Connection, history: list[Point]) -> list[Point]:
    """The history from the latest metric that carries a step's alert on: the new level."""
    alerted = alerts.change_alerted(conn, [p.metric_id for p in history])
    for index in range(len(history) - 1, -1, -1):
        if history[index].metric_id in alerted:
            return history[index:]
    return history


def _runs(
    window: list[Point], found: dict[int, Samples], report_of: dict[int, int]
) -> tuple[list[list[float]], list[int]]:
    """The window's runs, oldest first: each report's samples together (the iterations of one
    run share its machine; a metric of no report is a run of its own); and each run's first
    metric. ``report_of``: each metric's report (its point's)."""
    runs: list[list[float]] = []
    firsts: list[int] = []
    last: int | None = None
    for p in window:
        report_id = report_of.get(p.metric_id)
        if runs and report_id is not None and report_id == last:
            runs[-1].extend(found[p.metric_id].values)
        else:
            runs.append(list(found[p.metric_id].values))
            firsts.append(p.metric_id)
        last = report_id
    return runs, firsts


def _newest_runs(
    t: Any, runs: list[list[float]], firsts: list[int]
) -> tuple[list[list[float]], list[int]]:
    """The newest of the window's runs, as many as the threshold's sample size counts (runs for
    this test; ``DEFAULT_MAX_SAMPLE_SIZE`` when it sets none). The window is read one run
    longer (``evaluation.threshold_series``), so the oldest run, which its cut may have split,
    is the one left out."""
    size = DEFAULT_MAX_SAMPLE_SIZE if t.max_sample_size is None else t.max_sample_size
    keep = min(size, len(runs))
    return runs[len(runs) - keep :], firsts[len(firsts) - keep :]


def samples_step(result: Any) -> alerts.Change | None:
    """An alert's step from a comparison: its medians, relative shift and p-value (an
    **unknown** answer without them: the shift of the medians, p-value 1); None when the
    baseline's median is 0."""
    if result.shift is not None and result.pvalue is not None:
        return alerts.Change(result.baseline, result.new, result.shift, result.pvalue)
    if result.baseline is None or result.new is None or result.baseline == 0:
        return None
    shift = (result.new - result.baseline) / abs(result.baseline)
    return alerts.Change(result.baseline, result.new, shift, 1.0)


def combined_comparison(
    conn: Connection, t: Any, history: list[Point], judged: list[list[tuple[int, float]]]
) -> Any:
    """The ``samples`` comparison of the ``judged`` runs (each run's metric ids and values: a
    report's metrics of one benchmark, then each of its confirmation runs') with the baseline
    window of ``history``; None when the window is too short to judge."""
    from benchrunner.detection.samples import compare

    window = _window(conn, history)
    found = samples_of(
        conn, [(p.metric_id, p.value) for p in window] + [m for r in judged for m in r]
    )
    report_of = {p.metric_id: p.report_id for p in window}
    before, _ = _newest_runs(t, *_runs(window, found, report_of))
    if not before or (t.min_sample_size is not None and len(before) < t.min_sample_size):
        return None
    return compare(
        before,
        [[v for metric_id, _ in run for v in found[metric_id].values] for run in judged],
        max_pvalue=SAMPLES_MAX_PVALUE if t.max_pvalue is None else t.max_pvalue,
        min_effect=SAMPLES_MIN_MAGNITUDE if t.min_magnitude is None else t.min_magnitude,
    )
