"""A report's metrics stored where it lacks them (``reports.metrics_add_missing``), as its parts
are stored or stored again after a stop (``processing.metric_parts``), on both engines: results
of one metric (names equal without an ignore suffix) are each a metric of their own, as the
store in one transaction keeps them, whichever parts they fall in; and a report of more series
than a statement takes parameters is looked up in chunks."""

from __future__ import annotations

import collections
import datetime as dt

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from benchrunner.core.tiers import Plan
from benchrunner.server.store import accounts, reports
from benchrunner.server.store.reports import MetricValue, StoredMetric
from benchrunner.server.store.tables import metric
from tests.new_reports import new_report_on

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


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


def _stored(conn: Connection, report_id: int) -> list[tuple[int, int, int, float]]:
    rows = conn.execute(
        sa.select(metric.c.benchmark_id, metric.c.measure_id, metric.c.iteration, metric.c.value)
        .where(metric.c.report_id == report_id)
        .order_by(metric.c.id)
    )
    return [(int(b), int(m), int(i), float(v)) for b, m, i, v in rows]


def _value(benchmark: str, value: float, measure: str = "latency") -> MetricValue:
    return MetricValue(0, benchmark, measure, value, None, None)


DUPLICATED = [
    _value("b0", 1.0),
    _value("b1", 2.0),
    _value("b0_bencher_ignore", 3.0),  # the metric of b0 again
    _value("b2", 4.0),
    _value("b1-bencher-ignore", 5.0),  # the metric of b1 again
    _value("b0BencherIgnore", 6.0),  # and of b0 a third time
]


def _in_parts(
    conn: Connection, project_id: int, report_id: int, parts: list[list[MetricValue]]
) -> list[StoredMetric]:
    stored: list[StoredMetric] = []
    earlier: collections.Counter[reports.MetricId] = collections.Counter()
    for part in parts:
        added = reports.metrics_add_missing(conn, report_id, project_id, part, T0, earlier)
        earlier.update(m.key for m in added)
        stored += added
    return stored


@pytest.mark.parametrize("split", [1, 2, 3, 5])
def test_results_of_one_metric_in_different_parts_are_stored_as_one_store_keeps_them(
    engine: Engine, split: int
) -> None:
    """The report stored in one transaction keeps every result, the same metric's too; stored
    in parts (cut at ``split``), it holds the same metrics, in the same order; and stored
    again, whole or in the same parts (a stop half-way), it stores none twice and gives each
    result its own metric, with its own alert flag."""
    with engine.begin() as conn:
        project_id, whole = _report(conn)
        at_once = reports.metrics_add(conn, whole, project_id, DUPLICATED, T0)
        parted = _another_report(conn, project_id)
        parts = [DUPLICATED[:split], DUPLICATED[split:]]
        first = _in_parts(conn, project_id, parted, parts)
        again = _in_parts(conn, project_id, parted, parts)
        again_whole = reports.metrics_add_missing(conn, parted, project_id, DUPLICATED, T0)
        kept = _stored(conn, whole)
        stored = _stored(conn, parted)
    assert len(kept) == len(DUPLICATED) and stored == kept
    assert [m.value for m in first] == [v.value for v in DUPLICATED]
    assert len({m.id for m in first}) == len(DUPLICATED)
    assert again == first and again_whole == first
    assert [m.never_alerts for m in first] == [m.never_alerts for m in at_once]
    assert [m.never_alerts for m in first] == [False, False, True, False, True, True]


def test_a_part_that_stops_halfway_is_stored_again_without_its_stored_metrics_twice(
    engine: Engine,
) -> None:
    """A stop after the first part and part of the second: storing both again adds only the
    second part's missing results, the same metric's included."""
    with engine.begin() as conn:
        project_id, report_id = _report(conn)
        reports.metrics_add(conn, report_id, project_id, DUPLICATED[:4], T0)
        stored = _in_parts(conn, project_id, report_id, [DUPLICATED[:2], DUPLICATED[2:]])
        held = _stored(conn, report_id)
    assert [value for *_, value in held] == [v.value for v in DUPLICATED]
    assert [m.value for m in stored] == [v.value for v in DUPLICATED]


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
