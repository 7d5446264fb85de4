"""The perf page's charts: the perf query's points (``store.perf.perf_points``) grouped as uPlot
draws them, one chart per measure (its units on the y axis), one line per branch, testbed and
benchmark, the threshold's limits as a band around it and alerts as markers.

uPlot wants every line on one shared x axis: the chart's x values are the union of its points'
times, and a line has ``None`` where it has no point (drawn across, as a gap in the data, not
in the history). A report's iterations share its start time; each is placed a millisecond after
the previous one so none hides another.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

ITERATION_STEP = 0.001
"""Seconds between a report's iterations on the x axis."""


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


@dataclass(frozen=True)
class Row:
    """A point as the page's table shows it (the page without JavaScript)."""

    start_time: Any
    branch: str
    testbed: str
    benchmark: str
    iteration: int
    value: float
    lower_limit: float | None
    upper_limit: float | None
    alert: str | None
    alert_limit: str | None
    alert_status: str | None
    report: str
    version: int | None


@dataclass
class Chart:
    measure: Dimension
    x: list[float]
    lines: list[Line]
    markers: list[Marker]
    rows: list[Row] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        """What the page embeds for ``perf.js``."""
        return {
            "measure": self.measure.name,
            "units": self.measure.units,
            "x": self.x,
            "lines": [
                {
                    "label": line.label,
                    "values": line.values,
                    "band": line.band(),
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


def _x(point: Any) -> float:
    return float(point.start_time.timestamp() + point.iteration * ITERATION_STEP)


def _limits(points: list[Any | None], column: str) -> list[float | None] | None:
    values = [None if p is None else getattr(p, column) for p in points]
    return values if any(v is not None for v in values) else None


def _chart(measure: Dimension, points: list[Any], names: Names) -> Chart:
    xs = sorted({_x(p) for p in points})
    slot = {x: i for i, x in enumerate(xs)}
    by_line: dict[tuple[int, int, int], list[Any | None]] = {}
    for p in points:
        cells = by_line.setdefault((p.branch_id, p.testbed_id, p.benchmark_id), [None] * len(xs))
        cells[slot[_x(p)]] = p
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
                lower=_limits(cells, "lower_limit"),
                upper=_limits(cells, "upper_limit"),
                baseline=_limits(cells, "baseline"),
            )
        )
        markers.extend(
            Marker(
                line=index,
                x=xs[i],
                value=p.value,
                limit=p.alert_limit,
                status=p.alert_status,
                alert=str(p.alert_uuid),
                report=str(p.report_uuid),
            )
            for i, p in enumerate(cells)
            if p is not None and p.alert_uuid is not None
        )
    rows = [
        Row(
            start_time=p.start_time,
            branch=names.branches[p.branch_id].name,
            testbed=names.testbeds[p.testbed_id].name,
            benchmark=names.benchmarks[p.benchmark_id].name,
            iteration=p.iteration,
            value=p.value,
            lower_limit=p.lower_limit,
            upper_limit=p.upper_limit,
            alert=None if p.alert_uuid is None else str(p.alert_uuid),
            alert_limit=p.alert_limit,
            alert_status=p.alert_status,
            report=str(p.report_uuid),
            version=p.version,
        )
        for p in points
    ]
    return Chart(measure=measure, x=xs, lines=lines, markers=markers, rows=rows)


def build_charts(points: Iterable[Any], names: Names) -> list[Chart]:
    """One chart per measure that has points, in the measures' order in ``names``; the
    points are rows of ``store.perf.perf_points`` (oldest first), the table's rows keep that
    order."""
    by_measure: dict[int, list[Any]] = {}
    for p in points:
        by_measure.setdefault(p.measure_id, []).append(p)
    return [
        _chart(measure, by_measure[measure_id], names)
        for measure_id, measure in names.measures.items()
        if measure_id in by_measure
    ]
