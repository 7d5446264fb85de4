"""A step found after the fact on a metric whose crossing its confirmation runs doubted: the
boundary holds one alert, so the suspected one becomes the step's, active
(docs/how-to/thresholds-alerts.md#change-points-that-look-back); on both engines."""

from __future__ import annotations

import datetime as dt

from benchrunner.core.tiers import Plan
from benchrunner.detection.models import Model, TestKind
from benchrunner.server.store import accounts, alerts, reports, thresholds
from benchrunner.server.store.confirmations import alert_decide
from benchrunner.server.store.engine import make_engine
from benchrunner.server.store.reports import MetricValue
from benchrunner.server.store.tables import alert
from tests.databases import with_schema
from tests.new_reports import new_report_on

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
T1 = T0 + dt.timedelta(hours=1)


def test_a_suspected_alert_becomes_the_step_found_later(database_url: str) -> None:
    with_schema(database_url)
    engine = make_engine(database_url, writer=True)
    try:
        with engine.begin() as conn:
            leader = accounts.user_get_or_create(conn, "p@x", "p", admin=False, now=T0).id
            org = accounts.organization_create(conn, "org", Plan.TEAM, T0, leader_id=leader)
            project = accounts.project_create(conn, org.id, "p", "public", T0).id
            new = new_report_on(conn, project, "main", "box", "json", T0)
            crossing, _ = reports.report_create(conn, new)
            later, _ = reports.report_create(conn, new)
            value = MetricValue(1, "sort", "latency", 110.0, None, None)
            [metric] = reports.metrics_add(conn, crossing, project, [value], T0)
            key = thresholds.SeriesKey(new.branch_id, new.testbed_id, metric.measure_id, None)
            model = Model(TestKind.PERCENTAGE, upper_boundary=0.05)
            threshold_id = thresholds.threshold_put(conn, project, key, model, T0)[0]
            model_id = thresholds.current_models(conn, [threshold_id])[threshold_id].id
            boundary_id = alerts.boundary_put(
                conn, metric.id, threshold_id, model_id, 100.0, None, 105.0
            )
            held = alerts.alert_raise(conn, boundary_id, crossing, "upper", T0, pending=True)
            assert held is not None
            step = alerts.Change(100.0, 110.0, 0.1, 0.001, None)
            # Nothing to promote while the alert is held back, and a second raise is skipped.
            assert (
                alerts.alert_promote_suspected(conn, boundary_id, later, "upper", T1, step) is None
            )
            assert alerts.alert_raise(conn, boundary_id, later, "upper", T1, step) is None
            assert alert_decide(conn, held, "suspected", "suspected", T0)

            promoted = alerts.alert_promote_suspected(conn, boundary_id, later, "upper", T1, step)

            assert promoted == held
            row = conn.execute(alert.select().where(alert.c.id == held)).one()
            assert (row.status, row.report_id, row.confirmation) == ("active", later, "suspected")
            assert (row.change_before, row.change_after, row.change_pvalue) == (100.0, 110.0, 0.001)
            # Once active, it is not promoted again.
            assert (
                alerts.alert_promote_suspected(conn, boundary_id, later, "upper", T1, step) is None
            )
    finally:
        engine.dispose()
