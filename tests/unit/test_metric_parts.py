"""A report's metrics stored where it lacks them (``reports.metrics_add_missing``), as its parts
are stored or stored again after a stop (``processing.metric_parts``), on both engines: a
report of more series than a statement takes parameters is looked up in chunks."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from benchrunner.core.tiers import Plan
from benchrunner.server.store import accounts, reports
from benchrunner.server.store.engine import make_engine
from benchrunner.server.store.reports import MetricValue
from benchrunner.server.store.tables import metric
from tests.databases import with_schema
from tests.new_reports import new_report_on

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


@pytest.fixture
def engine(database_url: str) -> Iterator[Engine]:
    with_schema(database_url)
    made = make_engine(database_url, writer=True)
    yield made
    made.dispose()


def _report(conn: Connection) -> tuple[int, int]:
    """A new project's first report: (project id, report id)."""
    leader = accounts.user_get_or_create(conn, "l@x", "l", admin=False, now=T0).id
    org = accounts.organization_create(conn, "org", Plan.TEAM, T0, leader_id=leader)
    project = accounts.project_create(conn, org.id, "p", "public", T0).id
    return project, _another_report(conn, project)


def _another_report(conn: Connection, project_id: int) -> int:
    report_id, _ = reports.report_create(
        conn, new_report_on(conn, project_id, "main", "box", "json", T0)
    )
    return report_id


def test_a_report_of_more_series_than_a_statement_takes_parameters_is_stored_again(
    engine: Engine,
) -> None:
    """33,124 series (182 benchmarks of 182 measures): their lookup takes two parameters a
    series, more than PostgreSQL's 65,535 a statement, so it goes in chunks; storing the
    report again (recovery) finds every metric stored."""
    values = [
        MetricValue(0, f"b{b}", f"m{m}", float(b * 1000 + m), None, None)
        for b in range(182)
        for m in range(182)
    ]
    with engine.begin() as conn:
        project_id, report_id = _report(conn)
        first = reports.metrics_add(conn, report_id, project_id, values, T0)
        again = reports.metrics_add_missing(conn, report_id, project_id, values, T0)
        count = conn.execute(
            sa.select(sa.func.count()).where(metric.c.report_id == report_id)
        ).scalar_one()
    assert count == len(values) == 33_124
    assert again == first
