"""The perf page's duet panel: a chart per measure of the ratios, at their reports' times, the
interval as the band, and a marker on a ratio beyond its margin (the first one too: its
alert is named by its place in the panel, 0), naming its report."""

from __future__ import annotations

import datetime as dt
import uuid

from benchrunner.server.console.duet_chart import build_duet_panels
from benchrunner.server.console.perf_chart import Dimension, Names
from benchrunner.server.store.duets import DuetPoint

T0 = dt.datetime(2026, 1, 1, 12, 0, 0, 250_000, tzinfo=dt.UTC)
NAMES = Names(
    branches={1: Dimension("main", "main")},
    testbeds={1: Dimension("box", "box")},
    benchmarks={1: Dimension("sort", "sort")},
    measures={1: Dimension("Latency", "latency", "ns")},
)


def _ratio(day: int, ratio: float, limit: str | None) -> DuetPoint:
    return DuetPoint(
        branch_id=1,
        testbed_id=1,
        benchmark_id=1,
        measure_id=1,
        report_uuid=uuid.uuid4(),
        start_time=T0 + dt.timedelta(days=day),
        rounds=10,
        ratio=ratio,
        lower_value=ratio - 0.02,
        upper_value=ratio + 0.02,
        limit=limit,
        alert_uuid=None if limit is None else uuid.uuid4(),
        alert_status=None if limit is None else "dismissed",
    )


def test_a_ratio_beyond_its_margin_is_marked_the_first_one_too() -> None:
    ratios = [_ratio(0, 1.2, "upper"), _ratio(1, 1.0, None), _ratio(2, 0.8, None)]
    [panel] = build_duet_panels(ratios, NAMES)
    chart = panel.chart
    assert chart.kind == "duet"
    assert chart.x == [r.start_time.timestamp() for r in ratios]
    [line] = chart.lines
    assert line.values == [1.2, 1.0, 0.8]
    assert (line.lower, line.upper) == ([1.18, 0.98, 0.78], [1.22, 1.02, 0.8200000000000001])
    first = str(ratios[0].report_uuid)
    its_alert = str(ratios[0].alert_uuid)
    assert [(m.x, m.value, m.limit, m.status, m.alert, m.report) for m in chart.markers] == [
        (chart.x[0], 1.2, "upper", "dismissed", its_alert, first),  # its alert row's state
    ]
    assert chart.rows == []  # the panel's own table lists the ratios
    assert [row.report for row in panel.rows] == [str(r.report_uuid) for r in ratios]
    assert panel.alerts == 1
