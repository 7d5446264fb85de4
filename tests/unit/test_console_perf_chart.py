"""The perf page's charts: one per measure, lines on a shared x axis with gaps, limits only
where a threshold drew them, a marker per alert, and the points of noisy reports apart."""

from __future__ import annotations

import datetime as dt
import uuid

import pytest

from benchrunner.server.console.perf_chart import ITERATION_STEP, Dimension, Names, build_charts
from benchrunner.server.store.perf import PlotPoint

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
NAMES = Names(
    branches={1: Dimension("main", "main"), 2: Dimension("feature", "feature")},
    testbeds={1: Dimension("box", "box")},
    benchmarks={1: Dimension("sort", "sort"), 2: Dimension("hash", "hash")},
    measures={1: Dimension("Latency", "latency", "ns"), 2: Dimension("Memory", "memory", "B")},
)


def _point(
    day: int,
    value: float,
    *,
    branch: int = 1,
    benchmark: int = 1,
    measure: int = 1,
    iteration: int = 0,
    upper: float | None = None,
    alert: str | None = None,
    noisy: bool = False,
) -> PlotPoint:
    return PlotPoint(
        branch_id=branch,
        testbed_id=1,
        benchmark_id=benchmark,
        measure_id=measure,
        report_uuid=uuid.uuid4(),
        start_time=T0 + dt.timedelta(days=day),
        iteration=iteration,
        value=value,
        lower_limit=None,
        upper_limit=upper,
        baseline=None if upper is None else 100.0,
        alert_uuid=None if alert is None else uuid.uuid4(),
        alert_limit=alert,
        alert_status=None if alert is None else "active",
        version=day + 1,
        noisy=noisy,
    )


def test_one_chart_per_measure_in_the_measures_order() -> None:
    charts = build_charts([_point(0, 5.0, measure=2), _point(0, 1.0)], NAMES)
    assert [(c.measure.name, c.measure.units) for c in charts] == [
        ("Latency", "ns"),
        ("Memory", "B"),
    ]


def test_lines_share_the_x_axis_with_gaps_where_a_line_has_no_point() -> None:
    points = [
        _point(0, 10.0),
        _point(1, 11.0),
        _point(1, 7.0, branch=2),
        _point(2, 12.0),
        _point(2, 3.0, benchmark=2),
    ]
    [chart] = build_charts(points, NAMES)
    day = 86400.0
    assert [x - T0.timestamp() for x in chart.x] == [0.0, day, 2 * day]
    by_label = {line.label: line.values for line in chart.lines}
    assert by_label == {
        "sort · main · box": [10.0, 11.0, 12.0],
        "sort · feature · box": [None, 7.0, None],
        "hash · main · box": [None, None, 3.0],
    }
    assert chart.lines[0].label.startswith("hash")  # sorted by benchmark
    assert len(chart.rows) == 5


def test_a_reports_iterations_get_their_own_x() -> None:
    [chart] = build_charts([_point(0, 1.0), _point(0, 2.0, iteration=1)], NAMES)
    assert chart.x[1] - chart.x[0] == pytest.approx(ITERATION_STEP, abs=1e-6)
    assert chart.lines[0].values == [1.0, 2.0]


def test_limits_only_where_drawn_and_markers_on_alerts() -> None:
    points = [
        _point(0, 100.0),
        _point(1, 101.0, upper=110.0),
        _point(2, 150.0, upper=110.0, alert="upper"),
    ]
    [chart] = build_charts(points, NAMES)
    [line] = chart.lines
    assert line.upper == [None, 110.0, 110.0]
    assert line.lower is None  # no point had a lower limit: no band edge at all
    [marker] = chart.markers
    assert (marker.line, marker.x, marker.value, marker.limit, marker.status) == (
        0,
        chart.x[2],
        150.0,
        "upper",
        "active",
    )
    assert marker.alert == chart.rows[2].alert
    assert (chart.rows[2].value, chart.rows[2].upper_limit, chart.rows[2].lower_limit) == (
        "150",
        "110",
        "\u2013",
    )
    assert chart.rows[2].alert_text == "upper (active)"
    data = chart.as_json()
    assert data["markers"][0]["report"] == str(points[2].report_uuid)
    band = data["lines"][0]["band"]
    assert band["high"] == [None, 110.0, 110.0]
    assert band["low"] == [None, 100.0, 100.0]  # one limit: the band starts at the baseline
    assert (band["low_is_limit"], band["high_is_limit"]) == (False, True)


def test_no_points_no_charts() -> None:
    assert build_charts([], NAMES) == []


def test_noisy_points_stay_on_their_line_and_are_listed_apart() -> None:
    points = [_point(0, 100.0), _point(1, 180.0, noisy=True), _point(2, 101.0)]
    [chart] = build_charts(points, NAMES)
    [line] = chart.lines
    assert line.values == [100.0, 180.0, 101.0]  # still a point of the history
    assert line.noisy == [None, 180.0, None]
    assert [row.noisy for row in chart.rows] == [False, True, False]
    assert chart.noisy_points == 1
    assert chart.as_json()["lines"][0]["noisy"] == [None, 180.0, None]
    [quiet] = build_charts([_point(0, 1.0)], NAMES)
    assert quiet.lines[0].noisy is None and quiet.as_json()["lines"][0]["noisy"] is None
