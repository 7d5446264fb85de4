"""The ``change_point`` test judges a report's metrics together (``evaluation.evaluate_report``
finds the change points of all of them at once): on both engines, a report of many series
under ``change_point`` thresholds of two sets of parameters is judged exactly as when each of
its metrics is judged alone, boundaries and alerts to the last bit."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.core.tiers import Plan
from benchrunner.detection.models import Model, TestKind
from benchrunner.server.processing.evaluation import evaluate_report, series_thresholds_to_judge
from benchrunner.server.store import accounts, reports, thresholds
from benchrunner.server.store.engine import make_engine
from benchrunner.server.store.tables import alert, benchmark, boundary, measure, metric
from tests.databases import with_schema
from tests.new_reports import new_report_on

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
REPORTS = 40
MODELS = {
    "latency": Model(TestKind.CHANGE_POINT, max_pvalue=0.01, min_magnitude=0.05),
    "memory": Model(TestKind.CHANGE_POINT),
}
"""Two measures whose thresholds' detectors differ: judged in two groups."""
STEPS: dict[str, list[tuple[int, float]]] = {
    "flat": [],
    "early": [(5, 1.3)],
    "middle": [(20, 0.8)],
    "late": [(35, 1.2)],
    "two": [(12, 1.25), (28, 0.9)],
    "small": [(18, 1.03)],
    "newest": [(REPORTS - 1, 1.5)],
}
"""Each benchmark's steps: (first report after it, factor on the level)."""


def series_values(name: str, measure_index: int) -> list[float]:
    rng = random.Random(f"{name}-{measure_index}")
    level, steps, values = 100.0 * (measure_index + 1), dict(STEPS[name]), []
    for k in range(REPORTS):
        level *= steps.get(k, 1.0)
        values.append(level * rng.gauss(1, 0.01))
    return values


def judge_project(conn: Connection, org_id: int, slug: str, *, alone: bool) -> list[Any]:
    """A project whose reports carry every series' next value, each report judged as it is
    stored, whole or a metric at a time; what was judged, by names and report number."""
    project = accounts.project_create(conn, org_id, slug, "public", T0).id
    values = {(b, m): series_values(b, i) for b in STEPS for i, m in enumerate(MODELS)}
    report_ids: list[int] = []
    for k in range(REPORTS):
        at = T0 + dt.timedelta(days=k)
        new = new_report_on(conn, project, "main", "box", "json", at)
        report_id, _ = reports.report_create(conn, new)
        report_ids.append(report_id)
        batch = [reports.MetricValue(0, b, m, v[k], None, None) for (b, m), v in values.items()]
        stored = reports.metrics_add(conn, report_id, project, batch, at)
        if k == 0:
            measure_ids = {m.measure_id for m in stored}
            slugs = {r.id: r.slug for r in conn.execute(sa.select(measure.c.id, measure.c.slug))}
            for measure_id in measure_ids:
                key = thresholds.SeriesKey(new.branch_id, new.testbed_id, measure_id)
                thresholds.threshold_put(conn, project, key, MODELS[slugs[measure_id]], at)
        for judged in [[m] for m in stored] if alone else [stored]:
            found = series_thresholds_to_judge(conn, new.branch_id, new.testbed_id, judged)
            evaluate_report(conn, report_id, judged, at, found=found)
    number = {r: k for k, r in enumerate(report_ids)}
    named = (
        sa.select(
            benchmark.c.name.label("benchmark"),
            measure.c.slug.label("measure"),
            metric.c.report_id,
            boundary.c.id,
        )
        .join(benchmark, benchmark.c.id == metric.c.benchmark_id)
        .join(measure, measure.c.id == metric.c.measure_id)
        .join(boundary, boundary.c.metric_id == metric.c.id)
        .where(metric.c.report_id.in_(report_ids))
        .subquery()
    )
    drawn = conn.execute(
        sa.select(
            named.c.benchmark, named.c.measure, named.c.report_id,
            boundary.c.baseline, boundary.c.lower_limit, boundary.c.upper_limit,
        ).join(boundary, boundary.c.id == named.c.id)
    ).all()  # fmt: skip
    raised = conn.execute(
        sa.select(
            named.c.benchmark, named.c.measure, named.c.report_id, alert.c.report_id,
            alert.c.limit, alert.c.status, alert.c.change_before, alert.c.change_after,
            alert.c.change_magnitude, alert.c.change_pvalue, alert.c.change_from_report_id,
        ).join(alert, alert.c.boundary_id == named.c.id)
    ).all()  # fmt: skip
    return [
        sorted((b, m, number[r], *rest) for b, m, r, *rest in drawn),
        sorted(
            (b, m, number[r], number[by], *rest[:-1], number.get(rest[-1]))
            for b, m, r, by, *rest in raised
        ),
    ]


def test_a_report_of_many_change_point_series_is_judged_as_each_alone(database_url: str) -> None:
    with_schema(database_url)
    engine = make_engine(database_url, writer=True)
    try:
        with engine.begin() as conn:
            leader = accounts.user_get_or_create(conn, "c@x", "c", admin=False, now=T0).id
            org = accounts.organization_create(conn, "org", Plan.TEAM, T0, leader_id=leader).id
            together = judge_project(conn, org, "together", alone=False)
            alone = judge_project(conn, org, "alone", alone=True)
    finally:
        engine.dispose()
    drawn, raised = together
    assert len(drawn) >= len(STEPS) * len(MODELS) * REPORTS
    # the fixture's steps raise alerts under both parameter sets, and its small step one only
    # where no min_magnitude hides it
    assert {(b, m) for b, m, *_ in raised} >= {("early", "latency"), ("two", "memory")}
    assert ("small", "latency") not in {(b, m) for b, m, *_ in raised}
    assert together == alone
