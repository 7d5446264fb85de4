"""A duet's results judged against their margins and raised as ordinary alerts, on both
engines: the margin is the run's, else the series' percentage threshold's (the benchmark's
override first), else 0; the alert reads list duet alerts beside boundary alerts, and the
project's webhooks get them as any other."""

from __future__ import annotations

import datetime as dt
import json

from benchrunner.api.alerts import DuetMargin
from benchrunner.core.tiers import Plan
from benchrunner.detection.duet import METHOD, DuetEstimate
from benchrunner.detection.models import Model, TestKind
from benchrunner.server.processing.webhooks import emit_alert_event
from benchrunner.server.store import (
    accounts,
    activity,
    alerts,
    duets,
    reports,
    thresholds,
    webhooks,
)
from benchrunner.server.store.engine import make_engine
from benchrunner.server.store.reports import measure_ids, named_ids
from benchrunner.server.store.tables import benchmark
from benchrunner.server.views.resources import alert_view
from tests.databases import with_schema
from tests.new_reports import new_report_on

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)

# Unjudged estimates (limit None): duet_add judges each against its own margin.
ESTIMATES = [
    DuetEstimate("sort", "latency", 8, 1.10, 1.06, 1.14, None),  # +6..14 %
    DuetEstimate("scan", "latency", 8, 1.10, 1.06, 1.14, None),
    DuetEstimate("hash", "latency", 8, 0.90, 0.88, 0.92, None),  # -8..12 %
    DuetEstimate("sort", "memory", 8, 1.10, 1.06, 1.14, None),
    DuetEstimate("sort", "throughput", 8, 1.10, 1.06, 1.14, None),
]


def _duet(margin: float | None) -> duets.NewDuet:
    return duets.NewDuet(42, 8, "AB BA", METHOD, 2000, 0.95, margin, ESTIMATES)


def test_margins_come_from_the_run_else_a_percentage_threshold_else_zero(
    database_url: str,
) -> None:
    with_schema(database_url)
    engine = make_engine(database_url, writer=True)
    try:
        with engine.begin() as conn:
            leader = accounts.user_get_or_create(conn, "d@x", "d", admin=False, now=T0).id
            org = accounts.organization_create(conn, "org", Plan.TEAM, T0, leader_id=leader)
            project = accounts.project_create(conn, org.id, "p", "public", T0).id
            new = new_report_on(conn, project, "main", "box", "json", T0)
            measures = measure_ids(conn, project, ["latency", "memory", "throughput"], T0)
            benches = named_ids(conn, benchmark, project, ["sort", "scan"], T0)

            def put(measure: str, model: Model, bench: str | None = None) -> int:
                key = thresholds.SeriesKey(
                    new.branch_id,
                    new.testbed_id,
                    measures[measure],
                    None if bench is None else benches[bench],
                )
                return thresholds.threshold_put(conn, project, key, model, T0)[0]

            # latency: +20 % / -5 % for every benchmark, +2 % for sort alone (its override);
            # memory: a static threshold (no margin); throughput: none.
            wide = put(
                "latency", Model(TestKind.PERCENTAGE, lower_boundary=0.05, upper_boundary=0.2)
            )
            override = put("latency", Model(TestKind.PERCENTAGE, upper_boundary=0.02), "sort")
            put("memory", Model(TestKind.STATIC, upper_boundary=1e9))
            models = thresholds.current_models(conn, [wide, override])

            by_threshold, threshold_report = reports.report_create(conn, new)
            raised = duets.duet_add(conn, by_threshold, project, _duet(None), T0)
            by_run, run_report = reports.report_create(
                conn, new_report_on(conn, project, "main", "box", "json", T0)
            )
            raised_by_run = duets.duet_add(conn, by_run, project, _duet(0.5), T0)

            judged = duets.duet_for_report(conn, by_threshold)
            listed, total = alerts.alert_list(
                conn, project, alerts.AlertFilter(), ascending=True, limit=50, offset=0
            )
            of_sort, _ = alerts.alert_list(
                conn,
                project,
                alerts.AlertFilter(benchmark_id=benches["sort"], measure_id=measures["latency"]),
                ascending=True,
                limit=50,
                offset=0,
            )
            recent = activity.recent_alerts(conn, None, 10)
    finally:
        engine.dispose()

    assert judged is not None
    results = {(r.benchmark_name, r.measure_slug): r for r in judged[1]}
    sort = results[("sort", "latency")]  # the override: +2 %, no lower side
    assert (sort.lower_margin, sort.upper_margin, sort.margin_source) == (None, 0.02, "threshold")
    assert sort.margin_model_id == models[override].id and sort.limit == "upper"
    scan = results[("scan", "latency")]  # the measure's: +20 % holds +6..14 % back
    assert (scan.lower_margin, scan.upper_margin) == (0.05, 0.2)
    assert scan.margin_model_id == models[wide].id and scan.limit is None
    hash_ = results[("hash", "latency")]  # -8..12 % is beyond -5 %
    assert hash_.limit == "lower" and hash_.margin_source == "threshold"
    memory = results[("sort", "memory")]  # a static threshold gives no margin: 0
    assert (memory.margin_source, memory.upper_margin, memory.limit) == ("none", 0.0, "upper")
    throughput = results[("sort", "throughput")]
    assert (throughput.margin_source, throughput.limit) == ("none", "upper")

    assert raised == 4 and raised_by_run == 0  # the run's 50 % holds every one back
    assert total == 4
    views = [alert_view(row) for row in listed]
    assert {v.kind for v in views} == {"duet"}
    assert all(v.report == v.raised_by == str(threshold_report) for v in views)
    assert str(run_report) not in {v.report for v in views}
    (sort_view,) = [v for v in views if v.benchmark.name == "sort" and v.measure.slug == "latency"]
    assert sort_view.value == 1.10 and sort_view.metric is None
    assert sort_view.duet is not None and sort_view.threshold is not None
    assert sort_view.duet.margin == DuetMargin(
        lower=None, upper=0.02, source="threshold", threshold=sort_view.threshold.uuid
    )
    assert sort_view.threshold.model.upper_boundary == 0.02
    memory_view = next(v for v in views if v.measure.slug == "memory")
    assert memory_view.threshold is None and memory_view.duet is not None
    assert memory_view.duet.margin.source == "none"
    assert [alert_view(r).uuid for r in of_sort] == [sort_view.uuid]
    assert len(recent) == 4 and all(a.duet for a in recent)
    assert {a.value for a in recent} == {1.10, 0.90}


def test_a_duets_alerts_are_queued_for_the_projects_webhooks(database_url: str) -> None:
    with_schema(database_url)
    engine = make_engine(database_url, writer=True)
    try:
        with engine.begin() as conn:
            leader = accounts.user_get_or_create(conn, "d@x", "d", admin=False, now=T0).id
            org = accounts.organization_create(conn, "org", Plan.TEAM, T0, leader_id=leader)
            project = accounts.project_create(conn, org.id, "p", "public", T0).id
            for shape in ("json", "slack"):
                webhooks.webhook_add(
                    conn, project, "http://127.0.0.1:9/", ["alert.raised"], shape, "k" * 16, T0
                )
            report_id, _ = reports.report_create(
                conn, new_report_on(conn, project, "main", "box", "json", T0)
            )
            raised = duets.duet_add(conn, report_id, project, _duet(0.05), T0)
            ids = alerts.duet_alert_ids(conn, report_id)
            assert raised == len(ids) > 0
            assert emit_alert_event(conn, "alert.raised", ids, T0) == 2 * len(ids)
            claimed = webhooks.deliveries_claim(conn, T0, dt.timedelta(seconds=40), 100)
        bodies = [json.loads(c.body) for c in claimed]
        events = [b for b in bodies if "event" in b]
        assert {e["alert"]["kind"] for e in events} == {"duet"}
        # A 5 % margin: every estimate's interval lies beyond it, so each is an alert.
        assert sorted(e["alert"]["value"] for e in events) == sorted(e.ratio for e in ESTIMATES)
        slack = [b for b in bodies if "text" in b]
        assert len(slack) == len(events) and all(
            "Alert raised in p" in b["text"] and "contender/baseline" in b["text"] for b in slack
        )
    finally:
        engine.dispose()
