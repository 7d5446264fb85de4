"""A report's metric rows inserted at once (``metric_inserts.metric_ids_insert``) on both
engines: each id returned is the id of the row at the same place, whatever order the database
returned them in, and ``reports.metrics_add`` hands each value its own row."""

from __future__ import annotations

import datetime as dt
import uuid

import sqlalchemy as sa

from benchrunner.core.tiers import Plan
from benchrunner.server.store import accounts, reports
from benchrunner.server.store.engine import make_engine
from benchrunner.server.store.metric_inserts import metric_ids_insert
from benchrunner.server.store.tables import metric
from tests.databases import with_schema
from tests.new_reports import new_report_on

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def test_ids_follow_the_rows(database_url: str) -> None:
    with_schema(database_url)
    engine = make_engine(database_url, writer=True)
    try:
        with engine.begin() as conn:
            leader = accounts.user_get_or_create(conn, "m@x", "m", admin=False, now=T0).id
            org = accounts.organization_create(conn, "org", Plan.TEAM, T0, leader_id=leader)
            project = accounts.project_create(conn, org.id, "p", "public", T0).id
            report_id, _ = reports.report_create(
                conn, new_report_on(conn, project, "main", "box", "json", T0)
            )
            # values in descending order, so ids in ascending order cannot match by chance
            values = [
                reports.MetricValue(0, f"bench_{k:03d}", "latency", 1000.0 - k, None, None)
                for k in range(250)
            ]
            stored = reports.metrics_add(conn, report_id, project, values, T0)
            read = {
                int(row.id): (float(row.value), int(row.benchmark_id))
                for row in conn.execute(sa.select(metric).where(metric.c.report_id == report_id))
            }
            assert len(read) == len(values) == len({m.id for m in stored})
            for m, v in zip(stored, values, strict=True):
                assert read[m.id] == (v.value, m.benchmark_id)
                assert m.value == v.value

            row = {
                "uuid": uuid.uuid4(),
                "report_id": report_id,
                "iteration": 1,
                "benchmark_id": stored[0].benchmark_id,
                "measure_id": stored[0].measure_id,
                "lower_value": None,
                "upper_value": None,
            }
            rows = [{**row, "uuid": uuid.uuid4(), "value": float(k)} for k in range(3)]
            ids = metric_ids_insert(conn, rows)
            got = {
                int(i): float(v)
                for i, v in conn.execute(
                    sa.select(metric.c.id, metric.c.value).where(metric.c.id.in_(ids))
                )
            }
            assert [got[i] for i in ids] == [0.0, 1.0, 2.0]
            assert metric_ids_insert(conn, []) == []
    finally:
        engine.dispose()
