"""The perf page's charts: one per measure, lines on a shared x axis with gaps, limits only
where a threshold drew them, a marker per alert, and the points of noisy reports apart."""

from __future__ import annotations

import datetime as dt
import uuid

import pytest

from benchrunner.server.console.perf_chart import (
    ITERATION_STEP,
    TABLE_ROWS,
    Chart,
    Dimension,
    Named,
    Names,
    build_charts,
    named_alerts,
    named_reports,
)
from benchrunner.server.store.perf import PlotAlert, PlotPoint

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
NAMES = Names(
    branches={1: Dimension("main", "main"), 2: Dimension("feature", "feature")},
    testbeds={1: Dimension("box", "box")},
    benchmarks={1: Dimension("sort", "sort"), 2: Dimension("hash", "hash")},
    measures={1: Dimension("Latency", "latency", "ns"), 2: Dimension("Memory", "memory", "B")},
)


REPORTS: dict[int, uuid.UUID] = {}
"""The UUID of each report ``_point`` made (its id is its day)."""
ALERTS: dict[int, PlotAlert] = {}
"""Each alert ``_point`` raised, by its row id."""


def _report(day: int) -> int:
    REPORTS.setdefault(day, uuid.uuid4())
    return day


def _charts(points: list[PlotPoint]) -> list[Chart]:
    """``build_charts`` as the page calls it: with the named reports and alerts only."""
    named = Named(
        reports={k: REPORTS[k] for k in named_reports(points)},
        alerts={k: ALERTS[k] for k in named_alerts(points)},
    )
    return build_charts(points, NAMES, named)


def _alert(limit: str) -> int:
    alert_id = len(ALERTS) + 1
    ALERTS[alert_id] = PlotAlert(uuid.uuid4(), limit, "active")
    return alert_id


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
        report_id=_report(day),
        start_us=int((T0 + dt.timedelta(days=day)).timestamp()) * 1_000_000,
        iteration=iteration,
        value=value,
        lower_limit=None,
        upper_limit=upper,
        baseline=None if upper is None else 100.0,
        alert_id=None if alert is None else _alert(alert),
        noisy=int(noisy),
    )


def test_one_chart_per_measure_in_the_measures_order() -> None:
    charts = _charts([_point(0, 5.0, measure=2), _point(0, 1.0)])
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
    [chart] = _charts(points)
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
    [chart] = _charts([_point(0, 1.0), _point(0, 2.0, iteration=1)])
    assert chart.x[1] - chart.x[0] == pytest.approx(ITERATION_STEP, abs=1e-6)
    assert chart.lines[0].values == [1.0, 2.0]


def test_limits_only_where_drawn_and_markers_on_alerts() -> None:
    points = [
        _point(0, 100.0),
        _point(1, 101.0, upper=110.0),
        _point(2, 150.0, upper=110.0, alert="upper"),
    ]
    [chart] = _charts(points)
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
    assert data["markers"][0]["report"] == str(REPORTS[2])
    assert chart.rows[2].report == str(REPORTS[2])
    band = data["lines"][0]["band"]
    assert band["high"] == [None, 110.0, 110.0]
    assert band["low"] == [None, 100.0, 100.0]  # one limit: the band starts at the baseline
    assert (band["low_is_limit"], band["high_is_limit"]) == (False, True)


def test_no_points_no_charts() -> None:
    assert _charts([]) == []


def test_noisy_points_stay_on_their_line_and_are_listed_apart() -> None:
    points = [_point(0, 100.0), _point(1, 180.0, noisy=True), _point(2, 101.0)]
    [chart] = _charts(points)
    [line] = chart.lines
    assert line.values == [100.0, 180.0, 101.0]  # still a point of the history
    assert line.noisy == [None, 180.0, None]
    assert [row.noisy for row in chart.rows] == [False, True, False]
    assert chart.noisy_points == 1
    assert chart.as_json()["lines"][0]["noisy"] == [None, 180.0, None]
    [quiet] = _charts([_point(0, 1.0)])
    assert quiet.lines[0].noisy is None and quiet.as_json()["lines"][0]["noisy"] is None


def test_the_table_lists_the_newest_points_and_every_older_alert_and_noisy_one() -> None:
    days = TABLE_ROWS + 50
    points = [
        _point(
            day,
            180.0 if day in (3, days - 5) else 100.0,
            upper=110.0,
            alert="upper" if day in (3, days - 5) else None,
            noisy=day == 10,
        )
        for day in range(days)
    ]
    [chart] = _charts(points)
    assert len(chart.x) == len(chart.lines[0].values) == days  # the plot keeps every point
    assert len(chart.markers) == 2
    assert (chart.points, chart.noisy_points) == (days, 1)
    shown = [day for day in range(days) if day in (3, 10) or day >= 50]
    assert [row.report for row in chart.rows] == [str(REPORTS[day]) for day in shown]
    assert [row.alert_text for row in chart.rows[:2]] == ["upper (active)", ""]
    assert chart.rows[1].noisy
    assert chart.table_is_partial
    assert (chart.newest_rows, chart.older_rows) == (TABLE_ROWS, 2)
    assert named_reports(points) == set(shown)


def test_a_short_history_is_listed_whole() -> None:
    points = [_point(day, 100.0, alert="upper" if day == 0 else None) for day in range(5)]
    [chart] = _charts(points)
    assert len(chart.rows) == chart.points == 5
    assert not chart.table_is_partial and chart.older_rows == 0
