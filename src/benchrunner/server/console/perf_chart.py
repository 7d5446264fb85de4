"""The perf page's charts: the perf query's points (``store.perf.perf_plot_points``) grouped as
uPlot draws them, one chart per measure (its units on the y axis), one line per branch, testbed
and benchmark, the threshold's limits as a band around it, alerts as markers and the points of
noisy reports (issue 14) as hollow markers; and the rows of the page's table: the newest
``TABLE_ROWS`` points and every older one that has an alert or comes from a noisy report, so
that a reader without JavaScript misses no alert (the export links hold every point). Only
those rows are formatted as text: a year of a series is a thousand points, and their cells
cost more than the plot's JSON.

uPlot wants every line on one shared x axis: the chart's x values are the union of its points'
times, and a line has ``None`` where it has no point (drawn across, as a gap in the data, not
in the history). A report's iterations share its start time; each is placed a millisecond after
the previous one so none hides another.
"""

from __future__ import annotations

import operator
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from benchrunner.server.store.perf import PlotPoint

ITERATION_STEP = 0.001
"""Seconds between a report's iterations on the x axis."""
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
    flagged = [p for p in points[:older] if p.alert_uuid is not None or p.noisy]
    return flagged + points[older:]


def _rows(points: list[PlotPoint], names: Names, uuids: Mapping[int, uuid.UUID]) -> list[Row]:
    benchmarks = {k: v.name for k, v in names.benchmarks.items()}
    branches = {k: v.name for k, v in names.branches.items()}
    testbeds = {k: v.name for k, v in names.testbeds.items()}
    return [
        Row(
            p.start_time.isoformat(sep=" ", timespec="seconds")[:19],
            benchmarks[p.benchmark_id],
            branches[p.branch_id],
            testbeds[p.testbed_id],
            p.iteration,
            f"{p.value:.6g}",
            NO_VALUE if p.lower_limit is None else f"{p.lower_limit:.6g}",
            NO_VALUE if p.upper_limit is None else f"{p.upper_limit:.6g}",
            None if p.alert_uuid is None else str(p.alert_uuid),
            "" if p.alert_uuid is None else f"{p.alert_limit} ({p.alert_status})",
            str(uuids[p.report_id]),
            bool(p.noisy),
        )
        for p in points
    ]


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

    def as_json(self) -> dict[str, Any]:
        """What the page embeds for ``perf.js``."""
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


def _x(point: PlotPoint) -> float:
    return float(point.start_time.timestamp() + point.iteration * ITERATION_STEP)


def _limits(
    points: list[PlotPoint | None], column: Callable[[PlotPoint], float | None]
) -> list[float | None] | None:
    values = [None if p is None else column(p) for p in points]
    return values if any(v is not None for v in values) else None


def _noisy(points: list[PlotPoint | None]) -> list[float | None] | None:
    values = [p.value if p is not None and p.noisy else None for p in points]
    return values if any(v is not None for v in values) else None


_LOWER = operator.attrgetter("lower_limit")
_UPPER = operator.attrgetter("upper_limit")
_BASELINE = operator.attrgetter("baseline")


def _chart(
    measure: Dimension, points: list[PlotPoint], names: Names, uuids: Mapping[int, uuid.UUID]
) -> Chart:
    at = [_x(p) for p in points]
    xs = sorted(set(at))
    slot = {x: i for i, x in enumerate(xs)}
    by_line: dict[tuple[int, int, int], list[PlotPoint | None]] = {}
    for p, x in zip(points, at, strict=True):
        cells = by_line.setdefault((p.branch_id, p.testbed_id, p.benchmark_id), [None] * len(xs))
        cells[slot[x]] = p
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
        cells = by_line[key]
        lines.append(
            Line(
                branch=names.branches[key[0]].name,
                testbed=names.testbeds[key[1]].name,
                benchmark=names.benchmarks[key[2]].name,
                values=[None if p is None else p.value for p in cells],
                lower=_limits(cells, _LOWER),
                upper=_limits(cells, _UPPER),
                baseline=_limits(cells, _BASELINE),
                noisy=_noisy(cells),
            )
        )
        markers.extend(
            Marker(
                line=index,
                x=xs[i],
                value=p.value,
                limit=p.alert_limit or "",
                status=p.alert_status or "",
                alert=str(p.alert_uuid),
                report=str(uuids[p.report_id]),
            )
            for i, p in enumerate(cells)
            if p is not None and p.alert_uuid is not None
        )
    return Chart(
        measure=measure,
        x=xs,
        lines=lines,
        markers=markers,
        rows=_rows(table_points(points), names, uuids),
        points=len(points),
        noisy_points=sum(1 for p in points if p.noisy),
    )


def _by_measure(points: Iterable[PlotPoint]) -> dict[int, list[PlotPoint]]:
    found: dict[int, list[PlotPoint]] = {}
    for p in points:
        found.setdefault(p.measure_id, []).append(p)
    return found


def named_reports(points: Iterable[PlotPoint]) -> set[int]:
    """The reports (``PlotPoint.report_id``) whose UUIDs ``build_charts`` needs for the same
    points: those of the tables' rows and of the alerts' markers."""
    found: set[int] = set()
    for measure_points in _by_measure(points).values():
        found.update(p.report_id for p in table_points(measure_points))
        found.update(p.report_id for p in measure_points if p.alert_uuid is not None)
    return found


def build_charts(
    points: Iterable[PlotPoint], names: Names, uuids: Mapping[int, uuid.UUID]
) -> list[Chart]:
    """One chart per measure that has points, in the measures' order in ``names``; the
    points are ``store.perf.perf_plot_points``' (oldest first), the table's rows keep that
    order. ``uuids`` holds the UUIDs of at least the ``named_reports`` of the points."""
    by_measure = _by_measure(points)
    return [
        _chart(measure, by_measure[measure_id], names, uuids)
        for measure_id, measure in names.measures.items()
        if measure_id in by_measure
    ]
