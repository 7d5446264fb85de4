"""The perf page's charts: the perf query's points (``store.perf.perf_plot_points``) grouped as
uPlot draws them, one chart per measure (its units on the y axis), one line per branch, testbed
and benchmark, the threshold's limits as a band around it, alerts as markers and the points of
noisy reports (issue 14) as hollow markers; and the same points as the rows of the page's
table.

uPlot wants every line on one shared x axis: the chart's x values are the union of its points'
times, and a line has ``None`` where it has no point (drawn across, as a gap in the data, not
in the history). A report's iterations share its start time; each is placed a millisecond after
the previous one so none hides another.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from benchrunner.server.store.perf import PlotPoint

ITERATION_STEP = 0.001
"""Seconds between a report's iterations on the x axis."""
NO_VALUE = "\u2013"  # an en dash


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


def _rows(points: list[PlotPoint], names: Names) -> list[Row]:
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
            str(p.report_uuid),
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
    kind: str = "absolute"
    """``duet``: the lines are contender/baseline ratios and the band their interval."""

    @property
    def noisy_points(self) -> int:
        return sum(1 for row in self.rows if row.noisy)

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


def _chart(measure: Dimension, points: list[PlotPoint], names: Names) -> Chart:
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
                report=str(p.report_uuid),
            )
            for i, p in enumerate(cells)
            if p is not None and p.alert_uuid is not None
        )
    rows = _rows(points, names)
    return Chart(measure=measure, x=xs, lines=lines, markers=markers, rows=rows)


def build_charts(points: Iterable[PlotPoint], names: Names) -> list[Chart]:
    """One chart per measure that has points, in the measures' order in ``names``; the
    points are ``store.perf.perf_plot_points``' (oldest first), the table's rows keep that
    order."""
    by_measure: dict[int, list[PlotPoint]] = {}
    for p in points:
        by_measure.setdefault(p.measure_id, []).append(p)
    return [
        _chart(measure, by_measure[measure_id], names)
        for measure_id, measure in names.measures.items()
        if measure_id in by_measure
    ]
