"""A series' history from the store equals the history computed by hand from the same rows.

Random reports over two branches (one with a start point on the other) and two testbeds, with
tied start times, benchmarks missing from some reports and reports of two iterations; every
scope, sample size and window is compared with a plain reading of the rules: the scope's
reports, newest first (start time, then report, then metric), cut to the sample size, oldest
first. Small sample sizes take the store's fast path (the newest reports first) and its
fallback (a benchmark missing from those reports); None and large ones the whole series.
"""

from __future__ import annotations

import datetime as dt
import random
import uuid
from dataclasses import dataclass
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.core.tiers import Plan
from benchrunner.server.store import accounts, history, report_rows
from benchrunner.server.store.engine import make_engine
from benchrunner.server.store.tables import benchmark, branch, measure, metric, report, testbed
from tests.databases import with_schema

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
BENCHMARKS = 6


@dataclass(frozen=True)
class Row:
    metric_id: int
    report_id: int
    branch_id: int
    testbed_id: int
    benchmark_id: int
    version: int
    start_time: dt.datetime
    value: float


def _named(conn: Connection, table: sa.Table, project_id: int, name: str, **extra: Any) -> int:
    row = {"uuid": uuid.uuid4(), "project_id": project_id, "name": name, "slug": name}
    inserted = conn.execute(table.insert().returning(table.c.id), {**row, "created": T0, **extra})
    return int(inserted.scalar_one())


def _fill(conn: Connection, rng: random.Random) -> tuple[dict[str, int], list[int], list[Row]]:
    leader = accounts.user_get_or_create(conn, "h@x", "h", admin=False, now=T0).id
    org = accounts.organization_create(conn, "org", Plan.TEAM, T0, leader_id=leader)
    project = accounts.project_create(conn, org.id, "p", "public", T0).id
    ids = {
        "main": _named(conn, branch, project, "main"),
        "box": _named(conn, testbed, project, "box"),
        "other": _named(conn, testbed, project, "other"),
        "m": _named(conn, measure, project, "m"),
    }
    ids["pr"] = _named(
        conn, branch, project, "pr",
        start_point_branch_id=ids["main"], start_point_version=30, start_point_max_versions=12,
    )  # fmt: skip
    benchmarks = [
        _named(conn, benchmark, project, f"b{k}", ignored=False) for k in range(BENCHMARKS)
    ]
    rows: list[Row] = []
    versions = {ids["main"]: 0, ids["pr"]: 30}
    for _ in range(90):
        branch_id = ids["main"] if rng.random() < 0.7 else ids["pr"]
        testbed_id = ids["box"] if rng.random() < 0.8 else ids["other"]
        versions[branch_id] += 1
        start = T0 + dt.timedelta(hours=rng.randrange(60))  # many ties
        report_id = conn.execute(
            report.insert().returning(report.c.id),
            {
                "uuid": uuid.uuid4(), "project_id": project, "branch_id": branch_id,
                "testbed_id": testbed_id, "adapter": "json", "version": versions[branch_id],
                "start_time": start, "end_time": start, "created": start,
            },
        ).scalar_one()  # fmt: skip
        for iteration in range(rng.choice((1, 1, 2))):
            for benchmark_id in benchmarks:
                if benchmark_id == benchmarks[0] and rng.random() < 0.6:
                    continue  # a benchmark missing from most reports: the fallback
                value = rng.random()
                metric_id = conn.execute(
                    metric.insert().returning(metric.c.id),
                    {
                        "uuid": uuid.uuid4(), "report_id": report_id, "iteration": iteration,
                        "benchmark_id": benchmark_id, "measure_id": ids["m"], "value": value,
                    },
                ).scalar_one()  # fmt: skip
                rows.append(
                    Row(metric_id, report_id, branch_id, testbed_id, benchmark_id,
                        versions[branch_id], start, value)
                )  # fmt: skip
    return ids, benchmarks, rows


def _in_scope(row: Row, scope: history.Scope, since: dt.datetime | None) -> bool:
    own = row.branch_id == scope.branch_id
    inherited = (
        scope.start_point_branch_id is not None
        and scope.start_point_version is not None
        and scope.start_point_max_versions is not None
        and row.branch_id == scope.start_point_branch_id
        and scope.start_point_version - scope.start_point_max_versions
        < row.version
        <= scope.start_point_version
    )
    return (
        (own or inherited)
        and row.testbed_id == scope.testbed_id
        and row.report_id != scope.report_id
        and row.start_time <= scope.until
        and (since is None or row.start_time >= since)
    )


def _expected(
    rows: list[Row], scope: history.Scope, benchmark_id: int, since: Any, most: int | None
) -> list[history.Point]:
    mine = [r for r in rows if r.benchmark_id == benchmark_id and _in_scope(r, scope, since)]
    mine.sort(key=lambda r: (r.start_time, r.report_id, r.metric_id), reverse=True)
    kept = mine if most is None else mine[:most]
    return [history.Point(r.metric_id, r.value, r.report_id) for r in reversed(kept)]


def _points(found: dict[int, history.Series]) -> dict[int, list[history.Point]]:
    return {b: series.points() for b, series in found.items()}


def test_series_history_matches_the_rules(database_url: str) -> None:
    with_schema(database_url)
    engine = make_engine(database_url, writer=True)
    rng = random.Random(9)
    try:
        with engine.begin() as conn:
            ids, benchmarks, rows = _fill(conn, rng)
            judged = rows[-1].report_id
            scopes = [
                history.Scope(judged, ids["main"], ids["box"], T0 + dt.timedelta(hours=50),
                              None, None, None, None),
                history.Scope(judged, ids["main"], ids["other"], T0 + dt.timedelta(hours=99),
                              None, None, None, None),
                history.Scope(judged, ids["pr"], ids["box"], T0 + dt.timedelta(hours=99),
                              None, ids["main"], 30, 12),
            ]  # fmt: skip
            checked = 0
            statements: list[str] = []
            sa.event.listen(
                engine, "before_cursor_execute", lambda *a: statements.append(a[2].lower())
            )
            # all benchmarks (read through the newest reports), one, and two of them (each
            # looked up through the series' index)
            for asked in (benchmarks, benchmarks[:1], benchmarks[2:4]):
                for scope in scopes:
                    for since in (None, T0 + dt.timedelta(hours=20)):
                        for most in (None, 1, 3, 8, 500):
                            got = history.series_history(
                                conn, scope, ids["m"], asked, since=since, max_samples=most
                            )
                            assert sorted(got) == sorted(asked)
                            for b in asked:
                                expected = _expected(rows, scope, b, since, most)
                                assert got[b].points() == expected, (scope, b)
                                checked += len(got[b])
            assert checked > 1000  # the histories are not all empty
            among = [s for s in statements if "row_number" not in s and "metric.value" in s]
            assert any("metric.benchmark_id in" in s for s in among)  # looked up
            assert any("metric.benchmark_id in" not in s for s in among)  # through the reports
    finally:
        engine.dispose()


@pytest.mark.parametrize("most", [1, 4])
def test_a_benchmark_absent_from_the_newest_reports_reads_further_back(
    database_url: str, most: int
) -> None:
    with_schema(database_url)
    engine = make_engine(database_url, writer=True)
    try:
        with engine.begin() as conn:
            ids, benchmarks, rows = _fill(conn, random.Random(5))
            scope = history.Scope(
                -1, ids["main"], ids["box"], T0 + dt.timedelta(days=9), None, None, None, None
            )
            got = history.series_history(
                conn, scope, ids["m"], benchmarks[:1], since=None, max_samples=most
            )
            assert got[benchmarks[0]].points() == _expected(rows, scope, benchmarks[0], None, most)
            assert len(got[benchmarks[0]]) == most
    finally:
        engine.dispose()


@pytest.mark.parametrize("first", [None, 8])
def test_a_history_already_read_is_taken_from_the_reads(
    database_url: str, first: int | None
) -> None:
    """The look-back's series, fewer values of fewer benchmarks than the evaluation read, come
    from the evaluation's read without a statement, and are the same; a series wanting more
    than was read is read again."""
    with_schema(database_url)
    engine = make_engine(database_url, writer=True)
    statements: list[str] = []

    def count(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        statements.append(statement)

    try:
        with engine.begin() as conn:
            ids, benchmarks, rows = _fill(conn, random.Random(9))
            scope = history.Scope(
                rows[-1].report_id, ids["main"], ids["box"], T0 + dt.timedelta(hours=50),
                None, None, None, None,
            )  # fmt: skip
            since = T0 + dt.timedelta(hours=20)
            reads = history.SeriesReads()
            history.series_history(
                conn, scope, ids["m"], benchmarks, since=since, max_samples=first, reads=reads
            )
            sa.event.listen(engine, "before_cursor_execute", count)
            for most in (first, 3, 1):
                got = history.series_history(
                    conn, scope, ids["m"], benchmarks[1:], since=since, max_samples=most,
                    reads=reads,
                )  # fmt: skip
                assert _points(got) == {
                    b: _expected(rows, scope, b, since, most) for b in benchmarks[1:]
                }
            assert statements == []
            # more values than 8: read again (the whole series held them all)
            got = history.series_history(
                conn, scope, ids["m"], benchmarks, since=since, max_samples=500, reads=reads
            )
            assert _points(got) == {b: _expected(rows, scope, b, since, 500) for b in benchmarks}
            assert (statements != []) == (first is not None)
            # another window: read again
            read_before = len(statements)
            got = history.series_history(
                conn, scope, ids["m"], benchmarks, since=None, max_samples=3, reads=reads
            )
            assert _points(got) == {b: _expected(rows, scope, b, None, 3) for b in benchmarks}
            assert len(statements) > read_before
            sa.event.remove(engine, "before_cursor_execute", count)
    finally:
        engine.dispose()


def _second_measure(
    conn: Connection, ids: dict[str, int], rows: list[Row]
) -> tuple[int, list[Row]]:
    """A second measure with a metric beside each of ``rows`` (another value), in the same
    reports."""
    project_id = conn.execute(sa.select(measure.c.project_id).where(measure.c.id == ids["m"]))
    measure_id = _named(conn, measure, int(project_id.scalar_one()), "m2")
    second: list[Row] = []
    for row in rows:
        value = row.value * 3.0 + 1.0
        metric_id = conn.execute(
            metric.insert().returning(metric.c.id),
            {
                "uuid": uuid.uuid4(), "report_id": row.report_id, "iteration": 0,
                "benchmark_id": row.benchmark_id, "measure_id": measure_id, "value": value,
            },
        ).scalar_one()  # fmt: skip
        second.append(
            Row(metric_id, row.report_id, row.branch_id, row.testbed_id, row.benchmark_id,
                row.version, row.start_time, value)
        )  # fmt: skip
    return measure_id, second


@pytest.mark.parametrize("packed_rows", [None, 1])
def test_histories_read_together_are_those_read_one_by_one(
    database_url: str, packed_rows: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The histories of several measures, benchmarks, windows and sample sizes read together
    (``read_together``) are each what ``series_history`` reads, and are then taken from the
    reads without a statement: the few benchmarks and the whole series too, read one by
    one. With ``packed_rows`` 1, PostgreSQL's packed values hold one report each."""
    if packed_rows is not None:
        monkeypatch.setattr(report_rows, "PACKED_ROWS", packed_rows)
    postgresql = database_url.startswith("postgresql")
    with_schema(database_url)
    engine = make_engine(database_url, writer=True)
    statements: list[str] = []

    def count(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        statements.append(statement)

    try:
        with engine.begin() as conn:
            ids, benchmarks, rows = _fill(conn, random.Random(11))
            second, rows2 = _second_measure(conn, ids, rows)
            of_measure = {ids["m"]: rows, second: rows2}
            judged = rows[-1].report_id
            scopes = [
                history.Scope(judged, ids["main"], ids["box"], T0 + dt.timedelta(hours=50),
                              None, None, None, None),
                history.Scope(judged, ids["pr"], ids["box"], T0 + dt.timedelta(hours=99),
                              None, ids["main"], 30, 12),
            ]  # fmt: skip
            later = T0 + dt.timedelta(hours=20)
            checked = most_statements = 0
            for scope in scopes:
                for most in (1, 3, 8, 500):
                    wanted = [
                        history.Wanted(ids["m"], benchmarks, None, most),
                        history.Wanted(second, benchmarks[1:], None, most),
                        history.Wanted(second, benchmarks[:2], later, most),
                        history.Wanted(ids["m"], benchmarks[3:], later, None),
                    ]
                    reads = history.SeriesReads()
                    sa.event.listen(engine, "before_cursor_execute", count)
                    history.read_together(conn, scope, wanted, reads)
                    together = [
                        s
                        for s in statements
                        if "string_agg" in s or s.startswith("SELECT metric.measure_id, metric.b")
                    ]
                    if packed_rows is not None and postgresql:
                        most_statements = max(most_statements, len(together))
                    else:
                        assert len(together) == 1  # every measure's in one statement
                    statements.clear()
                    for w in wanted:
                        got = history.series_history(
                            conn, scope, w.measure_id, w.benchmark_ids,
                            since=w.since, max_samples=w.max_samples, reads=reads,
                        )  # fmt: skip
                        assert _points(got) == {
                            b: _expected(of_measure[w.measure_id], scope, b, w.since, w.max_samples)
                            for b in w.benchmark_ids
                        }, (scope, w)
                        checked += sum(len(s) for s in got.values())
                    assert statements == []  # all taken from the reads
                    sa.event.remove(engine, "before_cursor_execute", count)
            assert checked > 500  # the histories are not all empty
            if packed_rows is not None and postgresql:
                assert most_statements > 1  # the reports read one at a time
    finally:
        engine.dispose()
