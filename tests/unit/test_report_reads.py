"""The console's page of reports (``report_page``) on both engines: newest first, each with its
branch, testbed, job and counts of metrics and alerts, filtered by branch and testbed, paged
with the total."""

from __future__ import annotations

import datetime as dt
import uuid

from benchrunner.core.states import JobStatus
from benchrunner.core.tiers import Plan
from benchrunner.detection.models import Model, TestKind
from benchrunner.server.processing.evaluation import evaluate_report, series_thresholds_to_judge
from benchrunner.server.store import accounts, reports, runners, thresholds
from benchrunner.server.store.engine import make_engine
from benchrunner.server.store.report_reads import ReportFilter, report_page
from benchrunner.server.store.tables import job
from tests.databases import with_schema
from tests.new_reports import new_report_on

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def test_report_page(database_url: str) -> None:
    with_schema(database_url)
    engine = make_engine(database_url, writer=True)
    job_uuid = uuid.uuid4()
    try:
        with engine.begin() as conn:
            leader = accounts.user_get_or_create(conn, "r@x", "r", admin=False, now=T0).id
            org = accounts.organization_create(conn, "org", Plan.TEAM, T0, leader_id=leader)
            project = accounts.project_create(conn, org.id, "p", "public", T0).id
            other = accounts.project_create(conn, org.id, "q", "public", T0).id
            spec = runners.spec_create(
                conn, runners.NewSpec("s", "x86_64", 1, 1 << 30, 1 << 30, False), T0
            )
            made = []
            for day, (branch_name, value) in enumerate(
                [("main", 100.0), ("main", 100.0), ("main", 100.0), ("dev", 1.0), ("main", 200.0)]
            ):
                at = T0 + dt.timedelta(days=day)
                new = new_report_on(conn, project, branch_name, "box", "json", at)
                report_id, report_uuid = reports.report_create(conn, new)
                values = [reports.MetricValue(0, "sort", "latency", value, None, None)]
                stored = reports.metrics_add(conn, report_id, project, values, at)
                if day == 0:
                    key = thresholds.SeriesKey(new.branch_id, new.testbed_id, stored[0].measure_id)
                    model = Model(TestKind.PERCENTAGE, upper_boundary=0.1)
                    thresholds.threshold_put(conn, project, key, model, at)
                found = series_thresholds_to_judge(conn, new.branch_id, new.testbed_id, stored)
                evaluate_report(conn, report_id, stored, at, found=found)
                made.append((report_uuid, new.branch_id))
            # A runner job's report, not processed yet: no metrics.
            pending = new_report_on(conn, project, "main", "box", "json", T0 + dt.timedelta(days=9))
            pending_id, pending_uuid = reports.report_create(conn, pending)
            conn.execute(
                job.insert(),
                {
                    "uuid": job_uuid, "report_id": pending_id, "organization_id": org.id,
                    "source_ip": "127.0.0.1", "spec_id": spec.id, "config": "{}", "timeout": 60,
                    "priority": 0, "status": int(JobStatus.PENDING), "kind": "template",
                    "created": T0, "modified": T0,
                },
            )  # fmt: skip
            reports.report_create(conn, new_report_on(conn, other, "main", "box", "json", T0))

            everything, total = report_page(conn, project, ReportFilter(), limit=10, offset=0)
            first_two, total_again = report_page(conn, project, ReportFilter(), limit=2, offset=0)
            last, _ = report_page(conn, project, ReportFilter(), limit=2, offset=4)
            dev_branch = made[3][1]
            on_dev, dev_total = report_page(
                conn, project, ReportFilter(branch_id=dev_branch), limit=10, offset=0
            )
    finally:
        engine.dispose()
    assert total == total_again == 6  # the other project's report is not counted
    assert [r.uuid for r in everything] == [pending_uuid, *(u for u, _ in reversed(made))]
    assert [(r.metrics, r.alerts) for r in everything] == [
        (0, 0), (1, 1), (1, 0), (1, 0), (1, 0), (1, 0),
    ]  # fmt: skip
    assert everything[0].job_uuid == job_uuid
    assert all(r.job_uuid is None for r in everything[1:])
    assert (everything[1].branch_name, everything[1].testbed_name) == ("main", "box")
    assert [r.uuid for r in first_two] == [r.uuid for r in everything[:2]]
    assert [r.uuid for r in last] == [r.uuid for r in everything[4:]]
    assert dev_total == 1
    assert [r.branch_name for r in on_dev] == ["dev"]
