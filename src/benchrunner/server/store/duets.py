"""Duet verdicts: one ``duet`` row per duet report, one ``duet_result`` per benchmark and
measure. Never written to ``metric``: a ratio is no point of a benchmark's absolute history."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.detection.duet import DuetEstimate
from benchrunner.server.store.perf import PerfQuery, query_params
from benchrunner.server.store.reports import measure_ids, named_ids
from benchrunner.server.store.tables import benchmark, duet, duet_result, measure, report


@dataclass(frozen=True)
class NewDuet:
    """What a duet job's output gave: how it ran and its estimates."""

    seed: int
    rounds: int
    sequence: str
    method: str
    resamples: int
    confidence: float
    margin: float
    estimates: Sequence[DuetEstimate]


def duet_add(
    conn: Connection, report_id: int, project_id: int, found: NewDuet, now: dt.datetime
) -> None:
    duet_id = conn.execute(
        sa.insert(duet)
        .values(
            report_id=report_id,
            seed=found.seed,
            rounds=found.rounds,
            sequence=found.sequence,
            method=found.method,
            resamples=found.resamples,
            confidence=found.confidence,
            margin=found.margin,
            created=now,
        )
        .returning(duet.c.id)
    ).scalar_one()
    if not found.estimates:
        return
    benchmarks = named_ids(conn, benchmark, project_id, (e.benchmark for e in found.estimates), now)
    measures = measure_ids(conn, project_id, (e.measure for e in found.estimates), now)
    conn.execute(
        sa.insert(duet_result),
        [
            {
                "duet_id": duet_id,
                "benchmark_id": benchmarks[e.benchmark],
                "measure_id": measures[e.measure],
                "rounds": e.rounds,
                "ratio": e.ratio,
                "lower_value": e.lower,
                "upper_value": e.upper,
                "limit": e.limit,
            }
            for e in found.estimates
        ],
    )


_DUET = sa.select(duet).where(duet.c.report_id == sa.bindparam("report_id"))
_RESULTS = (
    sa.select(
        duet_result,
        benchmark.c.uuid.label("benchmark_uuid"),
        benchmark.c.name.label("benchmark_name"),
        benchmark.c.slug.label("benchmark_slug"),
        measure.c.uuid.label("measure_uuid"),
        measure.c.name.label("measure_name"),
        measure.c.slug.label("measure_slug"),
        measure.c.units.label("measure_units"),
    )
    .join(benchmark, benchmark.c.id == duet_result.c.benchmark_id)
    .join(measure, measure.c.id == duet_result.c.measure_id)
    .where(duet_result.c.duet_id == sa.bindparam("duet_id"))
    .order_by(benchmark.c.name, measure.c.name)
)


def duet_for_report(conn: Connection, report_id: int) -> tuple[Any, list[Any]] | None:
    """The report's duet row and its results, or None for a report that is no duet's."""
    row = conn.execute(_DUET, {"report_id": report_id}).first()
    if row is None:
        return None
    return row, list(conn.execute(_RESULTS, {"duet_id": row.id}).all())


_DUET_POINTS = (
    sa.select(
        report.c.branch_id,
        report.c.testbed_id,
        duet_result.c.benchmark_id,
        duet_result.c.measure_id,
        report.c.uuid.label("report_uuid"),
        report.c.start_time,
        duet_result.c.rounds,
        duet_result.c.ratio,
        duet_result.c.lower_value,
        duet_result.c.upper_value,
        duet_result.c.limit,
    )
    .select_from(report)
    .join(duet, duet.c.report_id == report.c.id)
    .join(duet_result, duet_result.c.duet_id == duet.c.id)
    .where(
        duet_result.c.benchmark_id.in_(sa.bindparam("benchmark_ids", expanding=True)),
        duet_result.c.measure_id.in_(sa.bindparam("measure_ids", expanding=True)),
        report.c.branch_id.in_(sa.bindparam("branch_ids", expanding=True)),
        report.c.testbed_id.in_(sa.bindparam("testbed_ids", expanding=True)),
        report.c.start_time >= sa.bindparam("start_time"),
        report.c.start_time <= sa.bindparam("end_time"),
    )
    .order_by(report.c.start_time, report.c.id, duet_result.c.id)
)


class DuetPoint(NamedTuple):
    """One duet ratio of a perf query's series (``duet_points``)."""

    branch_id: int
    testbed_id: int
    benchmark_id: int
    measure_id: int
    report_uuid: uuid.UUID
    start_time: dt.datetime
    rounds: int
    ratio: float
    lower_value: float
    upper_value: float
    limit: str | None


assert DuetPoint._fields == tuple(c.name for c in _DUET_POINTS.selected_columns)


def duet_points(conn: Connection, query: PerfQuery) -> list[DuetPoint]:
    """The duet ratios of the perf query's branches, testbeds, benchmarks and measures in its
    time range, oldest first: the perf view shows them apart from the absolute points. One
    statement, from the range's reports through their duet (one per report)."""
    return [DuetPoint._make(row) for row in conn.execute(_DUET_POINTS, query_params(query))]
