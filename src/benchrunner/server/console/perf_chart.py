"""The perf page's charts: the perf query's points (``store.perf.perf_plot_points``) grouped as
uPlot draws them, one chart per measure (its units on the y axis), one line per branch, testbed
and benchmark, the threshold's limits as a band around it, alerts as markers and the points of
noisy reports (docs/decisions/noise.md) as hollow markers; and the rows of the page's table: the
newest ``TABLE_ROWS`` points and every older one that has an alert or comes from a noisy report, so
that a reader without JavaScript misses no alert (the export links hold every point). Only
those rows are formatted as text: a year of a series is a thousand points, and their cells
cost more than the plot's JSON.

uPlot wants every line on one shared x axis: the chart's x values are the union of its points'
times, and a line has ``None`` where it has no point (drawn across, as a gap in the data, not
in the history). A report's iterations share its start time; each is placed a millisecond after
the previous one so none hides another.
"""

from __future__ import annotations

import datetime as dt
import operator
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from jinja2.utils import htmlsafe_json_dumps
from markupsafe import Markup

from benchrunner.server.console.chart_columns import packed_chart
from benchrunner.server.store.epoch import MICROSECONDS
from benchrunner.server.store.perf import PlotAlert, PlotPoint

ITERATION_STEP = 0.001
"""Seconds between a report's iterations on the x axis. A start's microseconds are divided by
``MICROSECONDS`` (ints both: exact, rounded once, as ``datetime.timestamp()`` divides them,
even past 2**53 microseconds, the year 2255)."""
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
NO_VALUE = "\u2013"  # an en dash
TABLE_ROWS = 200
"""The newest points a chart's table lists (besides the older alerted and noisy ones)."""


@dataclass(frozen=True)
class Dimension:
    """A branch, testbed, benchmark or measure as a chart names it."""

    name: str
    slug: str
    units: str = ""


@dataclass(frozen=True)
class Names:
    """The rows the query resolved, by id."""

    branches: Mapping[int, Dimension]
    testbeds: Mapping[int, Dimension]
    benchmarks: Mapping[int, Dimension]
    measures: Mapping[int, Dimension]


@dataclass(frozen=True)
class Named:
    """What charts name of a few of their points, read apart by row id (a ``PlotPoint`` holds
    ids): the UUIDs of at least the ``named_reports``, and the ``named_alerts``."""

    reports: Mapping[int, uuid.UUID]
    alerts: Mapping[int, PlotAlert]


@dataclass
class Line:
    """One branch, testbed and benchmark of a measure: its values and, when a threshold judged
    any of them, the limits it drew (``None`` where a point had none)."""

    branch: str
    testbed: str
    benchmark: str
    values: list[float | None]
    lower: list[float | None] | None
    upper: list[float | None] | None
    baseline: list[float | None] | None
    noisy: list[float | None] | None = None
    """The values of the points taken on a noisy machine (``None`` elsewhere); None: none."""

    @property
    def label(self) -> str:
        return f"{self.benchmark} · {self.branch} · {self.testbed}"

    def band(self) -> dict[str, Any] | None:
        """The band between the limits; a threshold with one limit bands from the baseline
        to it (``low_is_limit``/``high_is_limit`` say which edges are limits)."""
        if self.lower is None and self.upper is None:
            return None
        base = self.baseline or [None] * len(self.values)
        return {
            "low": self.lower if self.lower is not None else base,
            "high": self.upper if self.upper is not None else base,
            "low_is_limit": self.lower is not None,
            "high_is_limit": self.upper is not None,
        }


@dataclass(frozen=True)
class Marker:
    """An alert on a point of line ``line``."""

    line: int
    x: float
    value: float
    limit: str
    status: str
    alert: str
    report: str


class Row(NamedTuple):
    """A point as the page's table shows it (the page without JavaScript), its cells already
    text: a thousand rows formatted in the template cost more than the rest of the page."""

    start_time: str
    benchmark: str
    branch: str
    testbed: str
    iteration: int
    value: str
    lower_limit: str
    upper_limit: str
    alert: str | None
    alert_text: str
    report: str
    noisy: bool


def table_points(points: list[PlotPoint]) -> list[PlotPoint]:
    """The points the table lists, oldest first: the newest ``TABLE_ROWS`` and every older
    one with an alert or from a noisy report."""
    older = len(points) - TABLE_ROWS
    if older <= 0:
        return points
    flagged = [p for p in points[:older] if p.alert_id is not None or p.noisy]
    return flagged + points[older:]


def _when(start_us: int) -> str:
    """A point's start as the table shows it: ``YYYY-MM-DD HH:MM:SS``, UTC."""
    moment = EPOCH + dt.timedelta(microseconds=start_us)
    return moment.isoformat(sep=" ", timespec="seconds")[:19]


def _rows(points: list[PlotPoint], names: Names, named: Named) -> list[Row]:
    benchmarks = {k: v.name for k, v in names.benchmarks.items()}
    branches = {k: v.name for k, v in names.branches.items()}
    testbeds = {k: v.name for k, v in names.testbeds.items()}
    reports: dict[int, tuple[str, str]] = {}
    """A report's start and UUID as text: a report has a point per benchmark and measure."""
    rows = []
    for p in points:
        alert = None if p.alert_id is None else named.alerts[p.alert_id]
        report = reports.get(p.report_id)
        if report is None:
            report = reports[p.report_id] = (_when(p.start_us), str(named.reports[p.report_id]))
        rows.append(
            Row(
                report[0],
                benchmarks[p.benchmark_id],
                branches[p.branch_id],
                testbeds[p.testbed_id],
                p.iteration,
                f"{p.value:.6g}",
                NO_VALUE if p.lower_limit is None else f"{p.lower_limit:.6g}",
                NO_VALUE if p.upper_limit is None else f"{p.upper_limit:.6g}",
                None if alert is None else str(alert.uuid),
                "" if alert is None else f"{alert.limit} ({alert.status})",
                report[1],
                bool(p.noisy),
            )
        )
    return rows


@dataclass
class Chart:
    measure: Dimension
    x: list[float]
    lines: list[Line]
    markers: list[Marker]
    rows: list[Row] = field(default_factory=list)
    """The table's rows (``table_points``)."""
    points: int = 0
    noisy_points: int = 0
    kind: str = "absolute"
    """``duet``: the lines are contender/baseline ratios and the band their interval."""

    @property
    def newest_rows(self) -> int:
        """How many of the table's rows are the newest points (the rest: older flagged ones)."""
        return min(self.points, TABLE_ROWS)

    @property
    def older_rows(self) -> int:
        """The table's rows older than the newest ``TABLE_ROWS``: alerted or noisy ones."""
        return len(self.rows) - self.newest_rows

    @property
    def table_is_partial(self) -> bool:
        return len(self.rows) < self.points

    def json_script(self) -> Markup:
        """What the page embeds for ``perf.js``, the text of its ``<script
        type="application/json">``: ``as_json`` with its columns packed
        (``chart_columns``), its ``<``, ``>``, ``&`` and ``'`` escaped as Jinja's ``tojson``
        escapes them."""
        return htmlsafe_json_dumps(packed_chart(self.as_json()), separators=(",", ":"))

    def as_json(self) -> dict[str, Any]:
        """The chart as data: its x values, each line's values, band and noisy points (lists
        with None where a line has no point), and its alert markers."""
        return {
            "kind": self.kind,
            "measure": self.measure.name,
            "units": self.measure.units,
            "x": self.x,
            "lines": [
                {
                    "label": line.label,
                    "values": line.values,
                    "band": line.band(),
                    "noisy": line.noisy,
                }
                for line in self.lines
            ],
            "markers": [
                {
                    "line": m.line,
                    "x": m.x,
                    "value": m.value,
                    "limit": m.limit,
                    "status": m.status,
                    "alert": m.alert,
                    "report": m.report,
                }
                for m in self.markers
            ],
        }


_VALUE = operator.attrgetter("value")
_LOWER = operator.attrgetter("lower_limit")
_UPPER = operator.attrgetter("upper_limit")
_BASELINE = operator.attrgetter("baseline")
_NOISY = operator.attrgetter("noisy")
_START = operator.attrgetter("start_us")
_ITERATION = operator.attrgetter("iteration")
_MEASURE = operator.attrgetter("measure_id")
_ALERT = operator.attrgetter("alert_id")
_LINE_KEY = operator.attrgetter("branch_id", "testbed_id", "benchmark_id")

Cells = list[PlotPoint] | list[PlotPoint | None]
"""A line's point at each x of its chart; ``None`` where it has none (a sparse line)."""


def _xs(points: list[PlotPoint]) -> list[float]:
    """Each point's x: its report's start in seconds since the epoch (the float ``timestamp()``
    gives), plus its iteration's step."""
    return [
        start / MICROSECONDS + iteration * ITERATION_STEP
        for start, iteration in zip(map(_START, points), map(_ITERATION, points), strict=True)
    ]


def _cells(points: list[PlotPoint], slots: list[int], width: int) -> tuple[Cells, bool]:
    """A line's cells (``slots``: each point's x index) and whether every x has a point. Two
    points at one x (reports started at the same moment): the later one is drawn."""
    if len(points) == width and slots == list(range(width)):
        return points, True  # a point at every x, in order: the common case, no copy
    cells: list[PlotPoint | None] = [None] * width
    for slot, point in zip(slots, points, strict=True):
        cells[slot] = point
    return cells, False


def _column(
    cells: Cells, full: bool, field: Callable[[PlotPoint], float | None]
) -> list[float | None]:
    if full:
        return list(map(field, cells))  # type: ignore[arg-type]  # full: no None among them
    return [None if p is None else field(p) for p in cells]


def _drawn(values: list[float | None]) -> list[float | None] | None:
    """The limits' values, or None when no point has one (no band edge at all)."""
    return None if values.count(None) == len(values) else values


def _noisy(cells: Cells, full: bool) -> list[float | None] | None:
    present = cells if full else [p for p in cells if p is not None]
    if not any(map(_NOISY, present)):
        return None
    return [p.value if p is not None and p.noisy else None for p in cells]


def _line(key: tuple[int, int, int], cells: Cells, full: bool, names: Names) -> Line:
    branch_id, testbed_id, benchmark_id = key
    return Line(
        branch=names.branches[branch_id].name,
        testbed=names.testbeds[testbed_id].name,
        benchmark=names.benchmarks[benchmark_id].name,
        values=_column(cells, full, _VALUE),
        lower=_drawn(_column(cells, full, _LOWER)),
        upper=_drawn(_column(cells, full, _UPPER)),
        baseline=_drawn(_column(cells, full, _BASELINE)),
        noisy=_noisy(cells, full),
    )


def _marker(line: int, x: float, point: PlotPoint, alert: PlotAlert, named: Named) -> Marker:
    return Marker(
        line=line,
        x=x,
        value=point.value,
        limit=alert.limit,
        status=alert.status,
        alert=str(alert.uuid),
        report=str(named.reports[point.report_id]),
    )


def _chart(measure: Dimension, points: list[PlotPoint], names: Names, named: Named) -> Chart:
    at = _xs(points)
    xs = sorted(set(at))
    slot_of = dict(zip(xs, range(len(xs)), strict=True))
    by_line: dict[tuple[int, int, int], tuple[list[PlotPoint], list[float]]] = {}
    for p, x in zip(points, at, strict=True):
        found = by_line.get(_LINE_KEY(p))
        if found is None:
            found = by_line[_LINE_KEY(p)] = ([], [])
        found[0].append(p)
        found[1].append(x)
    keys = sorted(
        by_line,
        key=lambda k: (
            names.benchmarks[k[2]].name,
            names.branches[k[0]].name,
            names.testbeds[k[1]].name,
        ),
    )
    lines: list[Line] = []
    markers: list[Marker] = []
    for index, key in enumerate(keys):
        line_points, line_at = by_line[key]
        cells, full = _cells(line_points, list(map(slot_of.__getitem__, line_at)), len(xs))
        lines.append(_line(key, cells, full, names))
        alert_ids = list(map(_ALERT, line_points))
        if alert_ids.count(None) < len(alert_ids):
            markers.extend(
                _marker(index, xs[i], p, named.alerts[p.alert_id], named)
                for i, p in enumerate(cells)
                if p is not None and p.alert_id is not None
            )
    return Chart(
        measure=measure,
        x=xs,
        lines=lines,
        markers=markers,
        rows=_rows(table_points(points), names, named),
        points=len(points),
        noisy_points=sum(map(_NOISY, points)),
    )


def _by_measure(points: Iterable[PlotPoint]) -> dict[int, list[PlotPoint]]:
    points = list(points)
    measures = set(map(_MEASURE, points))
    if len(measures) == 1:
        return {measures.pop(): points}  # one measure: no point to sort out
    found: dict[int, list[PlotPoint]] = {m: [] for m in measures}
    for p in points:
        found[p.measure_id].append(p)
    return found


def named_reports(points: Iterable[PlotPoint]) -> set[int]:
    """The reports (``PlotPoint.report_id``) whose UUIDs ``build_charts`` needs for the same
    points: those of the tables' rows and of the alerts' markers."""
    found: set[int] = set()
    for measure_points in _by_measure(points).values():
        found.update(p.report_id for p in table_points(measure_points))
        found.update(p.report_id for p in measure_points if p.alert_id is not None)
    return found


def named_alerts(points: Iterable[PlotPoint]) -> set[int]:
    """The alerts (``PlotPoint.alert_id``) ``build_charts`` names: every one."""
    return {alert for alert in map(_ALERT, points) if alert is not None}


def build_charts(points: Iterable[PlotPoint], names: Names, named: Named) -> list[Chart]:
    """One chart per measure that has points, in the measures' order in ``names``; the
    points are ``store.perf.perf_plot_points``' (oldest first), the table's rows keep that
    order."""
    by_measure = _by_measure(points)
    return [
        _chart(measure, by_measure[measure_id], names, named)
        for measure_id, measure in names.measures.items()
        if measure_id in by_measure
    ]
