"""What the look-back reads of a series' points besides their values (``store.look_back``):
each report's stored time and noise verdict, and the alert on each point of the series, none
of another measure's, of a benchmark not asked for, or of an iteration the series' cut left
out."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.core.tiers import Plan
from benchrunner.detection.models import Model, TestKind
from benchrunner.server.store import accounts, alerts, thresholds
from benchrunner.server.store.engine import make_engine
from benchrunner.server.store.history import Series
from benchrunner.server.store.look_back import OnPoint, ReportFacts, points_facts
from benchrunner.server.store.tables import (
    alert,
    benchmark,
    branch,
    measure,
    metric,
    model,
    report,
    testbed,
)
from tests.databases import with_schema

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def _named(conn: Connection, table: sa.Table, project_id: int, name: str, **extra: Any) -> int:
    row = {"uuid": uuid.uuid4(), "project_id": project_id, "name": name, "slug": name}
    inserted = conn.execute(table.insert().returning(table.c.id), {**row, "created": T0, **extra})
    return int(inserted.scalar_one())


def _report(conn: Connection, ids: dict[str, int], hour: int, noise: str | None) -> int:
    at = T0 + dt.timedelta(hours=hour)
    return int(
        conn.execute(
            report.insert().returning(report.c.id),
            {
                "uuid": uuid.uuid4(), "project_id": ids["project"], "branch_id": ids["main"],
                "testbed_id": ids["box"], "adapter": "json", "start_time": at, "end_time": at,
                "created": at + dt.timedelta(minutes=5), "noise": noise,
            },
        ).scalar_one()
    )  # fmt: skip


def _metric(conn: Connection, report_id: int, benchmark_id: int, measure_id: int, k: int) -> int:
    return int(
        conn.execute(
            metric.insert().returning(metric.c.id),
            {
                "uuid": uuid.uuid4(), "report_id": report_id, "iteration": k,
                "benchmark_id": benchmark_id, "measure_id": measure_id, "value": 1.0 + k,
            },
        ).scalar_one()
    )  # fmt: skip


def test_points_facts_reads_the_reports_and_the_alerts_on_the_series(database_url: str) -> None:
    with_schema(database_url)
    engine = make_engine(database_url, writer=True)
    try:
        with engine.begin() as conn:
            leader = accounts.user_get_or_create(conn, "l@x", "l", admin=False, now=T0).id
            org = accounts.organization_create(conn, "org", Plan.TEAM, T0, leader_id=leader)
            project = accounts.project_create(conn, org.id, "p", "public", T0).id
            ids = {
                "project": project,
                "main": _named(conn, branch, project, "main"),
                "box": _named(conn, testbed, project, "box"),
                "m": _named(conn, measure, project, "m"),
                "other": _named(conn, measure, project, "other"),
            }
            b0, b1, b2 = (
                _named(conn, benchmark, project, f"b{k}", ignored=False) for k in range(3)
            )
            key = thresholds.SeriesKey(ids["main"], ids["box"], ids["m"])
            threshold_id, _ = thresholds.threshold_put(
                conn, project, key, Model(TestKind.T_TEST, max_sample_size=64), T0
            )
            model_id = conn.execute(
                sa.select(model.c.id).where(model.c.threshold_id == threshold_id)
            ).scalar_one()

            def alert_on(metric_id: int, change: bool, status: str = "active") -> int:
                boundary_id = alerts.boundary_put(
                    conn, metric_id, threshold_id, model_id, 1.0, None, None
                )
                step = alerts.Change(1.0, 2.0, 1.0, 0.001) if change else None
                alert_id = alerts.alert_raise(conn, boundary_id, report_id, "upper", T0, step)
                assert alert_id is not None
                if status != "active":
                    conn.execute(alert.update().where(alert.c.id == alert_id).values(status=status))
                return alert_id

            noisy = json.dumps({"verdict": "noisy", "cv": 0.2})
            quiet = json.dumps({"verdict": "quiet", "cv": 0.01})
            # the history, and the judged report's own points (the newest report's) apart
            series = {b0: Series(), b1: Series()}
            own = {b0: Series(), b1: Series()}
            expected_alerts: dict[int, OnPoint] = {}
            reports_of: dict[int, ReportFacts] = {}
            for hour, noise in enumerate([None, quiet, noisy, None]):
                report_id = _report(conn, ids, hour, noise)
                reports_of[report_id] = ReportFacts(
                    T0 + dt.timedelta(hours=hour, minutes=5), noise == noisy
                )
                # b0: two iterations a report, b1 one; b2 and the other measure not asked for
                first = _metric(conn, report_id, b0, ids["m"], 0)
                second = _metric(conn, report_id, b0, ids["m"], 1)
                lone = _metric(conn, report_id, b1, ids["m"], 0)
                elsewhere = _metric(conn, report_id, b2, ids["m"], 0)
                other = _metric(conn, report_id, b0, ids["other"], 0)
                for metric_id in (elsewhere, other):
                    alert_on(metric_id, change=False)
                points = own if hour == 3 else series
                if hour == 0:
                    # the series' cut left the first iteration of the oldest report out
                    alert_on(first, change=True)
                else:
                    points[b0].append(first, 1.0, report_id)
                points[b0].append(second, 2.0, report_id)
                points[b1].append(lone, 1.0, report_id)
                if hour == 1:
                    alert_id = alert_on(second, change=True, status="dismissed")
                    expected_alerts[second] = OnPoint(alert_id, "dismissed", None, True, T0)
                if hour == 3:
                    alert_id = alert_on(lone, change=False)
                    expected_alerts[lone] = OnPoint(alert_id, "active", None, False, T0)

            facts = points_facts(conn, ids["m"], {b: (series[b], own[b]) for b in series})

            assert facts.reports == reports_of
            assert facts.alerts == expected_alerts
    finally:
        engine.dispose()
