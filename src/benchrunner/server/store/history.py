"""The history a metric is judged against: earlier values of the same branch (with its start
point's inherited versions), testbed, benchmark and measure.

One query reads the history of many benchmarks of one measure at once, as the driver's rows,
ranked newest first per benchmark and cut to the model's sample size in NumPy (``_rank_rows``),
so processing a report costs a few queries per threshold, not one per metric. The query walks
``metric (benchmark_id, measure_id, report_id)`` within the scope's newest reports (read from
``report (branch_id, testbed_id, start_time)``): its cost follows the model's sample size and
the series' own length at most, never other projects' history.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import sqlalchemy as sa
from numpy.typing import NDArray
from sqlalchemy.engine import Connection

from benchrunner.server.store import report_rows
from benchrunner.server.store.tables import baseline_reset, metric, report

IN_LIST_CHUNK = 500


class Point(NamedTuple):
    """A value of the history."""

    metric_id: int
    value: float
    report_id: int


@dataclass
class Series:
    """One benchmark's history, oldest first, column by column: a report's evaluation reads
    ~200,000 values, and an object per value (``Point``) costs more than reading it, mostly in
    the garbage collector, which walks every such object again and again while it lives."""

    metric_ids: list[int] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    report_ids: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.values)

    def append(self, metric_id: int, value: float, report_id: int) -> None:
        self.metric_ids.append(metric_id)
        self.values.append(value)
        self.report_ids.append(report_id)

    def points(self) -> list[Point]:
        """The values as points, for the few series a caller takes one by one."""
        return list(map(Point, self.metric_ids, self.values, self.report_ids))

    def newest(self, count: int | None) -> Series:
        """Its newest ``count`` values (None: all), as a series of its own."""
        start = 0 if count is None else max(0, len(self.values) - count)
        return Series(self.metric_ids[start:], self.values[start:], self.report_ids[start:])


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


def _in_scope(scope: Scope, since: dt.datetime | None) -> list[sa.ColumnElement[bool]]:
    """The reports whose metrics are the history: the scope's, judged report and confirmation
    runs excluded (a re-run measures a report again: it is not one more point)."""
    conditions = [
        report.c.testbed_id == scope.testbed_id,
        report.c.id != scope.report_id,
        report.c.confirms_report_id.is_(None),
        report.c.start_time <= scope.until,
        _branch_condition(scope),
    ]
    if since is not None:
        conditions.append(report.c.start_time >= since)
    return conditions


_NEWEST_FIRST = (report.c.start_time.desc(), report.c.id.desc())


def _rows(conn: Connection, statement: sa.Select[Any], params: dict[str, Any]) -> list[Any]:
    """The statement's rows as the driver returns them (plain tuples of ints and floats): a
    report's evaluation reads ~200,000 values, and a SQLAlchemy row per value costs three
    times the driver's fetch (``benchmarks/RESULTS.md``, "Reports at scale")."""
    result = conn.execute(statement, params)
    try:
        rows: list[Any] = list(result.cursor.fetchall())
    finally:
        result.close()
    return rows


_IN_SCOPE = (
    sa.select(metric.c.benchmark_id, metric.c.id, metric.c.value, metric.c.report_id)
    .join(report, report.c.id == metric.c.report_id)
    .where(
        metric.c.measure_id == sa.bindparam("measure_id"),
        metric.c.benchmark_id.in_(sa.bindparam("benchmark_ids", expanding=True)),
    )
)
"""The metrics of some benchmarks in every report of a scope (its conditions added): a whole
series, for those not read among the newest reports."""


def _read_whole(
    conn: Connection,
    conditions: list[sa.ColumnElement[bool]],
    measure_id: int,
    benchmark_ids: list[int],
    max_samples: int | None,
    found: dict[int, Series],
) -> None:
    """Each benchmark's newest ``max_samples`` metrics (None: all) among every report in
    scope, oldest first: their rows, then their own reports newest first to rank them by (a
    new benchmark's few rows rank among their few reports, not the scope's whole list)."""
    statement = _IN_SCOPE.where(*conditions)
    rows: list[Any] = []
    for start in range(0, len(benchmark_ids), IN_LIST_CHUNK):
        chunk = benchmark_ids[start : start + IN_LIST_CHUNK]
        rows += _rows(conn, statement, {"measure_id": measure_id, "benchmark_ids": chunk})
    if not rows:
        return
    _rank_rows(rows, _newest_first(conn, {int(row[3]) for row in rows}), max_samples, found)


def _newest_first(conn: Connection, report_ids: set[int]) -> list[int]:
    """``report_ids`` ordered as ``_NEWEST_FIRST`` orders reports."""
    present = sorted(report_ids)
    keyed: list[tuple[Any, int]] = []
    for start in range(0, len(present), IN_LIST_CHUNK):
        chunk = present[start : start + IN_LIST_CHUNK]
        read = sa.select(report.c.start_time, report.c.id).where(report.c.id.in_(chunk))
        keyed += [(start_time, int(report_id)) for start_time, report_id in conn.execute(read)]
    keyed.sort(reverse=True)
    return [report_id for _, report_id in keyed]


_AMONG = sa.select(metric.c.benchmark_id, metric.c.id, metric.c.value, metric.c.report_id).where(
    metric.c.measure_id == sa.bindparam("measure_id"),
    metric.c.benchmark_id.in_(sa.bindparam("benchmark_ids", expanding=True)),
    metric.c.report_id.in_(sa.bindparam("report_ids", expanding=True)),
)
"""The metrics of some benchmarks in the newest reports in scope (which every condition of the
scope already chose): no join, no window function; they are ranked here (``_rank_rows``)."""

_MEASURES_PER_REPORT = (
    sa.select(metric.c.measure_id, sa.func.count())
    .where(
        metric.c.report_id.in_(sa.bindparam("report_ids", expanding=True)),
        metric.c.measure_id.in_(sa.bindparam("measure_ids", expanding=True)),
    )
    .group_by(metric.c.measure_id)
)
SAMPLED_REPORTS = 3
"""The newest reports whose metrics of the measure are counted to choose how to read: a report
whose job has not been processed yet has none."""


@dataclass(frozen=True)
class _Sample:
    """The metrics of each measure in the newest ``SAMPLED_REPORTS`` reports in scope."""

    reports: int
    per_measure: dict[int, int]

    def judged_whole(self, measure_id: int, benchmarks: int) -> bool:
        """Whether ``benchmarks`` are most of the measure's in a report (a report judged
        whole): then every metric of the measure in the newest reports is read, through the
        reports, and the others are dropped in NumPy, a third less than looking each benchmark
        up."""
        return 2 * benchmarks * self.reports >= self.per_measure.get(measure_id, 0)

    def per_report(self, measure_ids: Sequence[int]) -> float:
        """The metrics of ``measure_ids`` a report holds, on average."""
        return sum(self.per_measure.get(m, 0) for m in measure_ids) / self.reports


def _sample(conn: Connection, recent: list[int], measure_ids: Sequence[int]) -> _Sample:
    sampled = recent[:SAMPLED_REPORTS]
    params = {"report_ids": sampled, "measure_ids": list(measure_ids)}
    counted = {int(m): int(n) for m, n in conn.execute(_MEASURES_PER_REPORT, params)}
    return _Sample(len(sampled), counted)


def _recent(
    conn: Connection, conditions: list[sa.ColumnElement[bool]], max_samples: int
) -> list[int]:
    """The newest ``max_samples`` reports in scope, newest first."""
    newest = sa.select(report.c.id).where(*conditions).order_by(*_NEWEST_FIRST).limit(max_samples)
    return [int(i) for i in conn.execute(newest).scalars()]


def _read_among(
    conn: Connection,
    recent: list[int],
    measure_id: int,
    benchmark_ids: list[int],
    max_samples: int,
    found: dict[int, Series],
) -> None:
    """Each benchmark's newest ``max_samples`` metrics among the reports ``recent`` (newest
    first), oldest first: through the reports when they are judged whole (``_Sample``), else
    each benchmark looked up."""
    sample = _sample(conn, recent, [measure_id])
    if sample.judged_whole(measure_id, len(benchmark_ids)):
        columns = report_rows.read(conn, recent, [measure_id], sample.per_report([measure_id]))
        _rank_columns(columns, recent, max_samples, found)
        return
    for start in range(0, len(benchmark_ids), IN_LIST_CHUNK):
        chunk = benchmark_ids[start : start + IN_LIST_CHUNK]
        params = {"measure_id": measure_id, "benchmark_ids": chunk, "report_ids": recent}
        _rank_rows(_rows(conn, _AMONG, params), recent, max_samples, found)


def _refill_short(
    conn: Connection,
    conditions: list[sa.ColumnElement[bool]],
    measure_id: int,
    benchmark_ids: Sequence[int],
    recent: list[int],
    max_samples: int,
    found: dict[int, Series],
) -> None:
    """With ``max_samples`` reports in scope read (``recent``; fewer: those are all of them), a
    benchmark with fewer values among them, which those reports missed, reads its whole
    series."""
    if len(recent) < max_samples:
        return
    short = [b for b in benchmark_ids if len(found[b]) < max_samples]
    for b in short:
        found[b] = Series()
    if short:
        _read_whole(conn, conditions, measure_id, short, max_samples, found)


def _rank_rows(
    rows: list[Any], recent: list[int], max_samples: int | None, found: dict[int, Series]
) -> None:
    """Each benchmark's newest ``max_samples`` (None: all) of ``rows`` into ``found`` (other
    benchmarks' rows, and rows of reports not in ``recent``, dropped), oldest first: ranked by
    the report's place in ``recent`` (newest first: start time, then id, newer first), then
    the metric's id, newer first, in NumPy over the rows' columns."""
    if not rows or not recent:
        return
    columns = np.fromiter(rows, dtype=_ROW, count=len(rows))
    _rank_columns(columns, recent, max_samples, found)


_ROW = np.dtype([("b", np.int64), ("m", np.int64), ("v", np.float64), ("r", np.int64)])
"""A history row's columns as NumPy holds them: benchmark, metric, value, report."""


def _ranks(report_ids: NDArray[np.int64], recent: list[int]) -> NDArray[np.int64]:
    """Each report's place in ``recent`` (newest first); -1 for a report not in it."""
    by_id = np.argsort(recent)
    sorted_ids = np.asarray(recent, dtype=np.int64)[by_id]
    places = np.searchsorted(sorted_ids, report_ids)
    places = np.minimum(places, len(sorted_ids) - 1)
    listed = sorted_ids[places] == report_ids
    return np.where(listed, by_id[places], -1)


def _rank_columns(
    columns: NDArray[Any], recent: list[int], max_samples: int | None, found: dict[int, Series]
) -> None:
    """``_rank_rows`` of rows already in NumPy (``_ROW``)."""
    ranks = _ranks(columns["r"], recent)
    listed = ranks >= 0
    columns, ranks = columns[listed], ranks[listed]
    # by benchmark, then oldest first: the report's rank falling, the metric's id rising
    order = np.lexsort((columns["m"], -ranks, columns["b"]))
    _fill(columns[order], max_samples, found)


def _fill(ordered: NDArray[Any], max_samples: int | None, found: dict[int, Series]) -> None:
    """Rows (``_ROW``) by benchmark, each benchmark's oldest first, into ``found``: each
    benchmark's newest ``max_samples`` (None: all); benchmarks not in ``found`` dropped."""
    if len(ordered) == 0:
        return
    b = ordered["b"]
    starts = np.flatnonzero(np.r_[True, b[1:] != b[:-1]])
    stops = np.r_[starts[1:], len(b)]
    metric_list = ordered["m"].tolist()
    value_list = ordered["v"].tolist()
    report_list = ordered["r"].tolist()
    for benchmark_id, first, stop in zip(
        b[starts].tolist(), starts.tolist(), stops.tolist(), strict=True
    ):
        series = found.get(benchmark_id)
        if series is None:
            continue  # a benchmark not asked for
        if max_samples is not None:
            first = max(first, stop - max_samples)
        series.metric_ids.extend(metric_list[first:stop])
        series.values.extend(value_list[first:stop])
        series.report_ids.extend(report_list[first:stop])


class SeriesReads:
    """The histories one report's processing has read (``series_history`` with ``reads``), so
    that its look-back takes the series its evaluation read instead of reading them again: a
    read of at least as many newest values of the same series holds the ones wanted as its
    tail."""

    def __init__(self, cache: report_rows.ReportRows | None = None) -> None:
        self.cache = cache
        """Where the rows of the newest reports are kept between reports
        (``report_rows.ReportRows``; None: read every time): only for reads that see committed
        rows alone."""
        self._done: dict[tuple[Scope, int, dt.datetime | None], list[_Read]] = {}

    def find(
        self,
        scope: Scope,
        measure_id: int,
        benchmark_ids: Sequence[int],
        since: dt.datetime | None,
        max_samples: int | None,
    ) -> dict[int, Series] | None:
        for done in self._done.get((scope, measure_id, since), []):
            holds = done.max_samples is None or (
                max_samples is not None and max_samples <= done.max_samples
            )
            if holds and all(b in done.series for b in benchmark_ids):
                return {b: _newest(done.series[b], max_samples) for b in benchmark_ids}
        return None

    def add(
        self,
        scope: Scope,
        measure_id: int,
        since: dt.datetime | None,
        max_samples: int | None,
        series: dict[int, Series],
    ) -> None:
        self._done.setdefault((scope, measure_id, since), []).append(_Read(max_samples, series))


def _newest(series: Series, count: int | None) -> Series:
    """``series.newest(count)``, or the series itself when it holds no more (not copied: a
    report's look-back takes thousands of series its evaluation read)."""
    if count is None or len(series) <= count:
        return series
    return series.newest(count)


@dataclass(frozen=True)
class _Read:
    max_samples: int | None
    series: dict[int, Series]


def series_history(
    conn: Connection,
    scope: Scope,
    measure_id: int,
    benchmark_ids: Sequence[int],
    *,
    since: dt.datetime | None,
    max_samples: int | None,
    reads: SeriesReads | None = None,
) -> dict[int, Series]:
    """Each benchmark's history, oldest first: at most ``max_samples`` newest values
    (None: all), none older than ``since``, never the judged report's own. Of one report's
    values (its iterations) the last stored counts as the newest. ``reads``: the histories
    already read for this report, taken from when they hold this one, added to when not (a
    series taken from there may be the one held there: none is to be changed).

    With ``max_samples``, the newest ``max_samples`` reports in scope are read first: a
    benchmark with that many values among them has its newest values there, since every
    later report in the order comes before every earlier one. Only a benchmark with fewer (it
    missed some of those reports) reads its whole series. So a report's evaluation reads about
    ``max_samples`` values per series, not the series' whole length."""
    if reads is not None:
        done = reads.find(scope, measure_id, benchmark_ids, since, max_samples)
        if done is not None:
            return done
    found = _series_history(conn, scope, measure_id, benchmark_ids, since, max_samples)
    if reads is not None:
        reads.add(scope, measure_id, since, max_samples, found)
    return found


def _series_history(
    conn: Connection,
    scope: Scope,
    measure_id: int,
    benchmark_ids: Sequence[int],
    since: dt.datetime | None,
    max_samples: int | None,
) -> dict[int, Series]:
    conditions = _in_scope(scope, since)
    found = {benchmark_id: Series() for benchmark_id in benchmark_ids}
    ids = sorted(set(benchmark_ids))
    if max_samples is None:
        _read_whole(conn, conditions, measure_id, ids, None, found)
        return found
    recent = _recent(conn, conditions, max_samples)
    if not recent:
        return found
    _read_among(conn, recent, measure_id, ids, max_samples, found)
    _refill_short(conn, conditions, measure_id, ids, recent, max_samples, found)
    return found


@dataclass(frozen=True)
class Wanted:
    """One history a report's evaluation will read (``series_history``'s arguments)."""

    measure_id: int
    benchmark_ids: Sequence[int]
    since: dt.datetime | None
    max_samples: int | None


def wanted_history(
    conn: Connection, scope: Scope, wanted: Wanted, reads: SeriesReads | None
) -> dict[int, Series]:
    """``series_history`` of what ``wanted`` names."""
    return series_history(
        conn,
        scope,
        wanted.measure_id,
        wanted.benchmark_ids,
        since=wanted.since,
        max_samples=wanted.max_samples,
        reads=reads,
    )


def read_together(
    conn: Connection, scope: Scope, wanted: Sequence[Wanted], reads: SeriesReads
) -> None:
    """The histories ``wanted`` into ``reads``, each as ``series_history`` reads it, so that
    the evaluation's ``series_history`` calls find them there. Those of one window and sample
    size whose benchmarks are most of their measure's in a report (a report judged whole) are
    read in one statement for all their measures, over the same newest reports, straight from
    the driver into NumPy; the others one by one (``series_history``)."""
    groups: dict[tuple[dt.datetime | None, int], list[Wanted]] = {}
    alone: list[Wanted] = []
    for w in wanted:
        if w.max_samples is None:
            alone.append(w)  # a whole series
        elif reads.find(scope, w.measure_id, w.benchmark_ids, w.since, w.max_samples) is None:
            groups.setdefault((w.since, w.max_samples), []).append(w)
    for (since, max_samples), together in groups.items():
        alone += _read_group(conn, scope, since, max_samples, together, reads)
    for w in alone:
        wanted_history(conn, scope, w, reads)


def _read_group(
    conn: Connection,
    scope: Scope,
    since: dt.datetime | None,
    max_samples: int,
    together: list[Wanted],
    reads: SeriesReads,
) -> list[Wanted]:
    """The histories of ``together`` (one window and sample size) that a report judged whole
    reads, read together into ``reads``; the others, left to be read one by one."""
    conditions = _in_scope(scope, since)
    recent = _recent(conn, conditions, max_samples)
    if not recent:
        for w in together:  # nothing in scope
            reads.add(
                scope, w.measure_id, since, max_samples, {b: Series() for b in w.benchmark_ids}
            )
        return []
    sample = _sample(conn, recent, sorted({w.measure_id for w in together}))
    whole: list[Wanted] = []
    alone: list[Wanted] = []
    for w in together:
        judged_whole = sample.judged_whole(w.measure_id, len(set(w.benchmark_ids)))
        (whole if judged_whole else alone).append(w)
    if not whole:
        return alone
    whole_measures = sorted({w.measure_id for w in whole})
    columns = report_rows.read(
        conn, recent, whole_measures, sample.per_report(whole_measures), reads.cache
    )
    ranks = _ranks(columns["r"], recent)
    # by measure, then benchmark, then oldest first: the report's rank falling, the metric's
    # id rising
    order = np.lexsort((columns["m"], -ranks, columns["b"], columns["measure"]))
    ordered = columns[order]
    of_measure = ordered["measure"]
    for w in whole:
        first, stop = np.searchsorted(of_measure, [w.measure_id, w.measure_id + 1]).tolist()
        found = {benchmark_id: Series() for benchmark_id in w.benchmark_ids}
        _fill(ordered[first:stop], max_samples, found)
        ids = sorted(set(w.benchmark_ids))
        _refill_short(conn, conditions, w.measure_id, ids, recent, max_samples, found)
        reads.add(scope, w.measure_id, since, max_samples, found)
    return alone
