"""Reports and their metrics, with the branch/testbed/benchmark/measure names they refer to."""

from __future__ import annotations

import datetime as dt
import functools
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.core import slugs
from benchrunner.server.store.conflicts import insert_or_skip
from benchrunner.server.store.tables import benchmark, branch, measure, metric, report, testbed

IN_LIST_CHUNK = 500  # names per IN (...): far below SQLite's limit on bound parameters


@functools.cache
def _named_ids(table: sa.Table) -> sa.Select[Any]:
    return sa.select(table.c.id, table.c.name).where(
        table.c.project_id == sa.bindparam("project_id"),
        table.c.name.in_(sa.bindparam("names", expanding=True)),
    )


def _find_named(
    conn: Connection, table: sa.Table, project_id: int, names: list[str]
) -> dict[str, int]:
    found: dict[str, int] = {}
    for start in range(0, len(names), IN_LIST_CHUNK):
        chunk = names[start : start + IN_LIST_CHUNK]
        rows = conn.execute(_named_ids(table), {"project_id": project_id, "names": chunk})
        found.update((row.name, int(row.id)) for row in rows)
    return found


def named_ids(
    conn: Connection, table: sa.Table, project_id: int, names: Iterable[str], now: dt.datetime
) -> dict[str, int]:
    """The ids of the project's branches (testbeds, benchmarks, measures) with these names,
    those missing created (Bencher's behaviour).

    A name a concurrent transaction creates at the same moment is inserted once: the insert
    skips on conflict and the row is read back. Missing names are inserted in sorted order,
    and callers go branch, testbed, benchmark, measure, so two transactions creating
    overlapping names wait for each other instead of deadlocking.
    """
    wanted = sorted(set(names))
    found = _find_named(conn, table, project_id, wanted)
    missing = [name for name in wanted if name not in found]
    if missing:
        rows = [
            {
                "uuid": uuid.uuid4(),
                "project_id": project_id,
                "name": name,
                "slug": slugs.slugify(name),
                "created": now,
            }
            for name in missing
        ]
        conn.execute(insert_or_skip(conn, table, ("project_id", "name")), rows)
        found.update(_find_named(conn, table, project_id, missing))
    return found


def named_get_or_create(
    conn: Connection, table: sa.Table, project_id: int, name: str, now: dt.datetime
) -> int:
    """The id of the project's row with this name, created if missing."""
    return named_ids(conn, table, project_id, [name], now)[name]


@dataclass(frozen=True)
class NewReport:
    project_id: int
    user_id: int | None
    branch: str
    testbed: str
    adapter: str
    start_time: dt.datetime
    end_time: dt.datetime
    now: dt.datetime


_INSERT_REPORT = report.insert().returning(report.c.id)


def report_create(conn: Connection, params: NewReport) -> tuple[int, uuid.UUID]:
    report_uuid = uuid.uuid4()
    row = {
        "uuid": report_uuid,
        "user_id": params.user_id,
        "project_id": params.project_id,
        "branch_id": named_get_or_create(
            conn, branch, params.project_id, params.branch, params.now
        ),
        "testbed_id": named_get_or_create(
            conn, testbed, params.project_id, params.testbed, params.now
        ),
        "adapter": params.adapter,
        "start_time": params.start_time,
        "end_time": params.end_time,
        "error": None,
        "created": params.now,
    }
    report_id = conn.execute(_INSERT_REPORT, row).scalar_one()
    return report_id, report_uuid


@dataclass(frozen=True)
class MetricValue:
    iteration: int
    benchmark: str
    measure: str
    value: float
    lower_value: float | None
    upper_value: float | None


_INSERT_METRIC = metric.insert()


def metrics_add(
    conn: Connection, report_id: int, project_id: int, values: list[MetricValue], now: dt.datetime
) -> None:
    benchmarks = named_ids(conn, benchmark, project_id, (m.benchmark for m in values), now)
    measures = named_ids(conn, measure, project_id, (m.measure for m in values), now)
    rows = []
    for m in values:
        rows.append(
            {
                "uuid": uuid.uuid4(),
                "report_id": report_id,
                "iteration": m.iteration,
                "benchmark_id": benchmarks[m.benchmark],
                "measure_id": measures[m.measure],
                "value": m.value,
                "lower_value": m.lower_value,
                "upper_value": m.upper_value,
            }
        )
    if rows:
        conn.execute(_INSERT_METRIC, rows)


_FINISH_REPORT = (
    report.update()
    .where(report.c.id == sa.bindparam("report_id"))
    .values(
        start_time=sa.bindparam("start_time"),
        end_time=sa.bindparam("end_time"),
        error=sa.bindparam("error"),
    )
)


def report_finish(
    conn: Connection,
    report_id: int,
    *,
    start_time: dt.datetime,
    end_time: dt.datetime,
    error: str | None,
) -> None:
    conn.execute(
        _FINISH_REPORT,
        {"report_id": report_id, "start_time": start_time, "end_time": end_time, "error": error},
    )


_REPORT = (
    sa.select(
        report,
        branch.c.name.label("branch_name"),
        branch.c.uuid.label("branch_uuid"),
        testbed.c.name.label("testbed_name"),
        testbed.c.uuid.label("testbed_uuid"),
    )
    .join(branch, branch.c.id == report.c.branch_id)
    .join(testbed, testbed.c.id == report.c.testbed_id)
    .where(report.c.id == sa.bindparam("report_id"))
)
_REPORT_ID = sa.select(report.c.id).where(report.c.uuid == sa.bindparam("report_uuid"))
_METRICS = (
    sa.select(
        metric.c.uuid,
        metric.c.iteration,
        metric.c.value,
        metric.c.lower_value,
        metric.c.upper_value,
        benchmark.c.name.label("benchmark"),
        benchmark.c.uuid.label("benchmark_uuid"),
        measure.c.name.label("measure"),
        measure.c.uuid.label("measure_uuid"),
    )
    .join(benchmark, benchmark.c.id == metric.c.benchmark_id)
    .join(measure, measure.c.id == metric.c.measure_id)
    .where(metric.c.report_id == sa.bindparam("report_id"))
    .order_by(metric.c.iteration, benchmark.c.name, measure.c.name)
)


def report_row(conn: Connection, report_id: int) -> Any:
    return conn.execute(_REPORT, {"report_id": report_id}).one()


def report_by_uuid(conn: Connection, report_uuid: uuid.UUID) -> Any:
    return conn.execute(_REPORT_ID, {"report_uuid": report_uuid}).scalar()


def report_metrics(conn: Connection, report_id: int) -> list[Any]:
    return list(conn.execute(_METRICS, {"report_id": report_id}))
