"""The perf query: the metrics of chosen branches, testbeds, benchmarks and measures over a time
range, each with its report's version, its boundary and its alert (docs/decisions/processing.md).

One statement reads every point: it starts from ``metric`` by (benchmark, measure), the index a
series' history uses, so its cost follows the size of the series asked for, not of the project's
or other projects' history.
"""

from __future__ import annotations

import datetime as dt
import functools
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Dialect

from benchrunner.server.store.alerts import JUDGED_BY
from benchrunner.server.store.epoch import epoch_microseconds
from benchrunner.server.store.tables import (
    alert,
    boundary,
    metric,
    model,
    report,
    threshold,
)

MAX_SERIES = 256
"""Series (branches times testbeds times benchmarks times measures) one query may ask for."""

NOISY_VERDICT = '"verdict":"noisy"'
"""How a noisy report's stored noise JSON (``server.processing.noise.NoiseVerdict.stored``,
compact) says so: matched in SQL, so that a point's noisiness costs no JSON parse per point on
either engine."""
_NOISY = sa.type_coerce(
    sa.case((report.c.noise.like(f"%{NOISY_VERDICT}%"), sa.true()), else_=sa.false()), sa.Boolean
).label("noisy")


@dataclass(frozen=True)
class PerfQuery:
    branch_ids: Sequence[int]
    testbed_ids: Sequence[int]
    benchmark_ids: Sequence[int]
    measure_ids: Sequence[int]
    start_time: dt.datetime
    end_time: dt.datetime


_IN_QUERY = (
    metric.c.benchmark_id.in_(sa.bindparam("benchmark_ids", expanding=True)),
    metric.c.measure_id.in_(sa.bindparam("measure_ids", expanding=True)),
    report.c.branch_id.in_(sa.bindparam("branch_ids", expanding=True)),
    report.c.testbed_id.in_(sa.bindparam("testbed_ids", expanding=True)),
    report.c.start_time >= sa.bindparam("start_time"),
    report.c.start_time <= sa.bindparam("end_time"),
    # A confirmation run measures a report again: the report is the point, once.
    report.c.confirms_report_id.is_(None),
)
_ORDER = (report.c.start_time, report.c.id, metric.c.iteration)

_POINTS = (
    sa.select(
        report.c.branch_id,
        report.c.testbed_id,
        metric.c.benchmark_id,
        metric.c.measure_id,
        report.c.uuid.label("report_uuid"),
        report.c.start_time,
        report.c.end_time,
        report.c.version,
        report.c.hash,
        metric.c.id.label("metric_id"),
        metric.c.uuid.label("metric_uuid"),
        metric.c.iteration,
        metric.c.value,
        metric.c.lower_value,
        metric.c.upper_value,
        *JUDGED_BY,
        alert.c.uuid.label("alert_uuid"),
        alert.c.limit.label("alert_limit"),
        alert.c.status.label("alert_status"),
        alert.c.modified.label("alert_modified"),
        _NOISY,
    )
    .select_from(metric)
    .join(report, report.c.id == metric.c.report_id)
    .outerjoin(boundary, boundary.c.metric_id == metric.c.id)
    .outerjoin(model, model.c.id == boundary.c.model_id)
    .outerjoin(threshold, threshold.c.id == boundary.c.threshold_id)
    .outerjoin(alert, alert.c.boundary_id == boundary.c.id)
    .where(*_IN_QUERY)
    .order_by(*_ORDER)
)

_NOISY_FLAG = sa.case((report.c.noise.like(f"%{NOISY_VERDICT}%"), 1), else_=0).label("noisy")
"""``_NOISY`` as 1 or 0: an integer is what both drivers give as is (a Boolean needs a
conversion per row on SQLite)."""

_PLOT_POINTS = (
    sa.select(
        report.c.branch_id,
        report.c.testbed_id,
        metric.c.benchmark_id,
        metric.c.measure_id,
        report.c.id.label("report_id"),
        epoch_microseconds(report.c.start_time).label("start_us"),
        metric.c.iteration,
        metric.c.value,
        boundary.c.baseline,
        boundary.c.lower_limit,
        boundary.c.upper_limit,
        alert.c.id.label("alert_id"),
        _NOISY_FLAG,
    )
    .select_from(metric)
    .join(report, report.c.id == metric.c.report_id)
    .outerjoin(boundary, boundary.c.metric_id == metric.c.id)
    .outerjoin(alert, alert.c.boundary_id == boundary.c.id)
    .where(*_IN_QUERY)
    .order_by(*_ORDER)
)


class PlotPoint(NamedTuple):
    """A point as a plot draws it (``perf_plot_points``): numbers and short strings only, each
    as the driver reads it."""

    branch_id: int
    testbed_id: int
    benchmark_id: int
    measure_id: int
    report_id: int
    """The report's row, not its UUID (``report_uuids``): a page names the reports of a few
    of its points only."""
    start_us: int
    """The report's start time in microseconds since the epoch (``store.epoch``)."""
    iteration: int
    value: float
    baseline: float | None
    lower_limit: float | None
    upper_limit: float | None
    alert_id: int | None
    """The alert this point raised (``plot_alerts``): few points have one."""
    noisy: int
    """1: the point's report was taken on a noisy machine (its alerts withheld); else 0."""


assert PlotPoint._fields == tuple(c.name for c in _PLOT_POINTS.selected_columns)
_plot_point: Callable[[Iterable[Any]], PlotPoint] = functools.partial(tuple.__new__, PlotPoint)
"""A driver's row as a ``PlotPoint``, made in C (``PlotPoint._make`` is a Python call)."""
_UNCONVERTED: dict[str, bool] = {}
"""By dialect: whether SQLAlchemy would convert none of ``_PLOT_POINTS``' columns."""


def query_params(query: PerfQuery) -> dict[str, Any]:
    """The statement parameters of ``query`` (``_IN_QUERY``'s)."""
    return {
        "benchmark_ids": list(query.benchmark_ids),
        "measure_ids": list(query.measure_ids),
        "branch_ids": list(query.branch_ids),
        "testbed_ids": list(query.testbed_ids),
        "start_time": query.start_time,
        "end_time": query.end_time,
    }


def perf_points(conn: Connection, query: PerfQuery) -> list[Any]:
    """Every point of the query, oldest first (then by report and iteration)."""
    return list(conn.execute(_POINTS, query_params(query)))


def perf_plot_points(conn: Connection, query: PerfQuery) -> list[PlotPoint]:
    """What a plot of the query draws: the points in ``perf_points``' order with their limits
    and alert, nothing of the model.

    Ten thousand points are read as the driver's tuples, without a ``Row`` each: a ``Row``, a
    ``datetime`` or a ``UUID`` per point, and the garbage collections their allocations set
    off, cost the console more than the query itself (benchmarks/RESULTS.md, "Console
    pages"). Safe because no column of the statement needs SQLAlchemy's conversion on this
    dialect, which is checked once per dialect (AssertionError otherwise)."""
    with conn.execute(_PLOT_POINTS, query_params(query)) as result:
        cursor = result.cursor
        _check_unconverted(conn.dialect, cursor.description)
        return list(map(_plot_point, cursor.fetchall()))


def _check_unconverted(dialect: Dialect, description: Sequence[Sequence[Any]]) -> None:
    """AssertionError if SQLAlchemy would convert a column of ``_PLOT_POINTS`` (its processors
    may depend on the type the driver reports, so they are asked with the cursor's)."""
    unconverted = _UNCONVERTED.get(dialect.name)
    if unconverted is None:
        unconverted = _UNCONVERTED[dialect.name] = all(
            column.type.dialect_impl(dialect).result_processor(dialect, described[1]) is None
            for column, described in zip(_PLOT_POINTS.selected_columns, description, strict=True)
        )
    assert unconverted, f"a column of the plot's read needs a conversion on {dialect.name}"


ROWS_PER_STATEMENT = 500
"""Row ids one ``report_uuids`` or ``plot_alerts`` statement asks for (well under either
engine's limit on a statement's parameters)."""


class PlotAlert(NamedTuple):
    """An alert as a plot marks it (``plot_alerts``)."""

    uuid: uuid.UUID
    limit: str
    """``lower`` or ``upper``."""
    status: str


def _by_id(conn: Connection, columns: Sequence[Any], ids: Iterable[int]) -> list[Any]:
    """The rows of ``columns`` (the first: a table's id) whose id is one of ``ids``."""
    wanted = sorted(set(ids))
    found: list[Any] = []
    for start in range(0, len(wanted), ROWS_PER_STATEMENT):
        chunk = wanted[start : start + ROWS_PER_STATEMENT]
        found += conn.execute(sa.select(*columns).where(columns[0].in_(chunk))).all()
    return found


def report_uuids(conn: Connection, report_ids: Iterable[int]) -> dict[int, uuid.UUID]:
    """The UUIDs of the reports ``report_ids`` (a ``PlotPoint``'s ``report_id``), by id."""
    return {row.id: row.uuid for row in _by_id(conn, (report.c.id, report.c.uuid), report_ids)}


def plot_alerts(conn: Connection, alert_ids: Iterable[int]) -> dict[int, PlotAlert]:
    """The alerts ``alert_ids`` (a ``PlotPoint``'s ``alert_id``), by id."""
    columns = (alert.c.id, alert.c.uuid, alert.c.limit, alert.c.status)
    return {
        row.id: PlotAlert(row.uuid, row.limit, row.status)
        for row in _by_id(conn, columns, alert_ids)
    }
