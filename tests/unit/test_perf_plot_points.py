"""The console's lean perf read (``perf_plot_points``) gives the points of the API's
(``perf_points``): the same rows in the same order, with the same limits and alerts (their
start as microseconds since the epoch, their report and alert as row ids read apart), on both
engines. The history is stored and judged by the code processing runs."""

from __future__ import annotations

import datetime as dt

from benchrunner.core.tiers import Plan
from benchrunner.detection.models import Model, TestKind
from benchrunner.server.processing.evaluation import evaluate_report, series_thresholds_to_judge
from benchrunner.server.store import accounts, reports, thresholds
from benchrunner.server.store.engine import make_engine
from benchrunner.server.store.perf import (
    PerfQuery,
    PlotAlert,
    perf_plot_points,
    perf_points,
    plot_alerts,
    report_uuids,
)
from tests.databases import with_schema
from tests.new_reports import new_report_on

T0 = dt.datetime(2026, 1, 1, 0, 0, 0, 999_600, tzinfo=dt.UTC)
"""Just under a second: a start time read by the millisecond would count the next one."""
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
VALUES = (100.0, 101.0, 99.0, 100.0, 150.0)


def test_plot_points_are_the_perf_points(database_url: str) -> None:
    with_schema(database_url)
    engine = make_engine(database_url, writer=True)
    try:
        with engine.begin() as conn:
            leader = accounts.user_get_or_create(conn, "p@x", "p", admin=False, now=T0).id
            org = accounts.organization_create(conn, "org", Plan.TEAM, T0, leader_id=leader)
            project = accounts.project_create(conn, org.id, "p", "public", T0).id
            for day, value in enumerate(VALUES):
                at = T0 + dt.timedelta(days=day)
                new = new_report_on(conn, project, "main", "box", "json", at)
                report_id, _ = reports.report_create(conn, new)
                values = [
                    reports.MetricValue(i, name, "latency", value + i, None, None)
                    for i in range(2)
                    for name in ("sort", "hash")
                ]
                stored = reports.metrics_add(conn, report_id, project, values, at)
                if day == 0:
                    key = thresholds.SeriesKey(new.branch_id, new.testbed_id, stored[0].measure_id)
                    model = Model(TestKind.PERCENTAGE, upper_boundary=0.1)
                    thresholds.threshold_put(conn, project, key, model, at)
                found = series_thresholds_to_judge(conn, new.branch_id, new.testbed_id, stored)
                evaluate_report(conn, report_id, stored, at, found=found)
            ids = {(m.benchmark_id, m.measure_id) for m in stored}
            query = PerfQuery(
                branch_ids=[new.branch_id],
                testbed_ids=[new.testbed_id],
                benchmark_ids=sorted(b for b, _ in ids),
                measure_ids=sorted({m for _, m in ids}),
                start_time=T0,
                end_time=T0 + dt.timedelta(days=30),
            )
            full = perf_points(conn, query)
            lean = perf_plot_points(conn, query)
            uuids = report_uuids(conn, (p.report_id for p in lean))
            alerts = plot_alerts(conn, (p.alert_id for p in lean if p.alert_id is not None))
    finally:
        engine.dispose()
    assert len(full) == len(VALUES) * 4
    assert len(lean) == len(full)
    read_apart = {"report_id", "start_us", "alert_id"}
    for row, point in zip(full, lean, strict=True):
        fields = [name for name in point._fields if name not in read_apart]
        assert {name: getattr(point, name) for name in fields} == {
            name: getattr(row, name) for name in fields
        }
        assert point.start_us == (row.start_time - EPOCH) // dt.timedelta(microseconds=1)
        assert uuids[point.report_id] == row.report_uuid
        if point.alert_id is None:
            assert row.alert_uuid is None
        else:
            assert alerts[point.alert_id] == PlotAlert(
                row.alert_uuid, row.alert_limit, row.alert_status
            )
    assert len(uuids) == len(VALUES)
    alerted = [(p.value, alerts[p.alert_id]) for p in lean if p.alert_id is not None]
    assert {(value, alert.limit, alert.status) for value, alert in alerted} == {
        (150.0, "upper", "active"),
        (151.0, "upper", "active"),
    }
    assert all(p.upper_limit is not None for p in lean[4:])  # judged once there was history
