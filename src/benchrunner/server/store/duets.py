"""Duet verdicts: one ``duet`` row per duet report, one ``duet_result`` per benchmark and
measure, and an ``alert`` per result beyond its margin. Never written to ``metric``: a ratio is
no point of a benchmark's absolute history.

Each result's margin: the run's ``duet.margin`` when it gave one (source ``run``); else the
threshold of the report's branch and testbed for that measure (the benchmark's override if it
has one, as evaluation picks) when its current model is a percentage: its upper boundary for a
contender measuring higher, its lower boundary for one measuring lower, a missing boundary
raising nothing on that side (source ``threshold``); else 0 (source ``none``). A
confirmation's duet (docs/how-to/thresholds-alerts.md) raises no alert of its own."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.detection.duet import DuetEstimate, DuetMargin, sided_limit
from benchrunner.detection.models import TestKind
from benchrunner.server.store.confirmations import is_confirmation_run
from benchrunner.server.store.perf import PerfQuery, query_params
from benchrunner.server.store.reports import measure_ids, named_ids
from benchrunner.server.store.tables import (
    alert,
    benchmark,
    duet,
    duet_result,
    measure,
    model,
    report,
    threshold,
)
from benchrunner.server.store.thresholds import thresholds_for

MarginSource = Literal["run", "threshold", "none"]
NO_MARGIN = DuetMargin(0.0, 0.0)


@dataclass(frozen=True)
class NewDuet:
    """What a duet job's output gave: how it ran and its estimates."""

    seed: int
    rounds: int
    sequence: str
    method: str
    resamples: int
    confidence: float
    margin: float | None
    """The run's ``duet.margin``; None when it gave none."""
    estimates: Sequence[DuetEstimate]
    """Their ``limit`` is not read: ``duet_add`` judges each against its own margin."""


class AppliedMargin(NamedTuple):
    """The margin a duet result was judged with, and where it came from."""

    margin: DuetMargin
    source: MarginSource
    model_id: int | None
    """The percentage model that gave it (source ``threshold``)."""


_SERIES_OF = sa.select(report.c.branch_id, report.c.testbed_id).where(
    report.c.id == sa.bindparam("report_id")
)


def applied_margins(
    conn: Connection, report_id: int, run_margin: float | None, keys: Sequence[tuple[int, int]]
) -> dict[tuple[int, int], AppliedMargin]:
    """The margin of each (benchmark id, measure id) of a duet report (see the module's doc)."""
    if run_margin is not None:
        run = AppliedMargin(DuetMargin(run_margin, run_margin), "run", None)
        return {key: run for key in keys}
    series = conn.execute(_SERIES_OF, {"report_id": report_id}).one()
    found = thresholds_for(conn, series.branch_id, series.testbed_id, (m for _, m in keys))
    wide = {t.measure_id: t for t in found if t.benchmark_id is None}
    override = {(t.benchmark_id, t.measure_id): t for t in found if t.benchmark_id is not None}
    applied: dict[tuple[int, int], AppliedMargin] = {}
    for key in keys:
        chosen = override.get(key) or wide.get(key[1])
        if chosen is not None and chosen.test == TestKind.PERCENTAGE.value:
            margin = DuetMargin(chosen.lower_boundary, chosen.upper_boundary)
            applied[key] = AppliedMargin(margin, "threshold", int(chosen.id))
        else:
            applied[key] = AppliedMargin(NO_MARGIN, "none", None)
    return applied


def duet_add(
    conn: Connection, report_id: int, project_id: int, found: NewDuet, now: dt.datetime
) -> int:
    """Store the duet, its results judged against their margins, and an active alert for each
    result beyond its margin (raised by the duet's report). Returns the alerts raised."""
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
        return 0
    benchmarks = named_ids(conn, benchmark, project_id, (e.benchmark for e in found.estimates), now)
    measures = measure_ids(conn, project_id, (e.measure for e in found.estimates), now)
    keys = [(benchmarks[e.benchmark], measures[e.measure]) for e in found.estimates]
    margins = applied_margins(conn, report_id, found.margin, keys)
    rows = []
    for e, key in zip(found.estimates, keys, strict=True):
        applied = margins[key]
        rows.append(
            {
                "duet_id": duet_id,
                "benchmark_id": key[0],
                "measure_id": key[1],
                "rounds": e.rounds,
                "ratio": e.ratio,
                "lower_value": e.lower,
                "upper_value": e.upper,
                "limit": sided_limit(e.lower, e.upper, applied.margin),
                "lower_margin": applied.margin.lower,
                "upper_margin": applied.margin.upper,
                "margin_source": applied.source,
                "margin_model_id": applied.model_id,
            }
        )
    conn.execute(sa.insert(duet_result), rows)
    if is_confirmation_run(conn, report_id):
        return 0  # a confirmation's duet decides the alert its report held back, raises none
    return _raise_alerts(conn, duet_id, report_id, now)


_BEYOND = (
    sa.select(duet_result.c.id, duet_result.c.limit)
    .where(duet_result.c.duet_id == sa.bindparam("duet_id"), duet_result.c.limit.is_not(None))
    .order_by(duet_result.c.id)
)


def _raise_alerts(conn: Connection, duet_id: int, report_id: int, now: dt.datetime) -> int:
    beyond = conn.execute(_BEYOND, {"duet_id": duet_id}).all()
    if beyond:
        conn.execute(
            sa.insert(alert),
            [
                {
                    "uuid": uuid.uuid4(),
                    "duet_result_id": row.id,
                    "report_id": report_id,
                    "limit": row.limit,
                    "status": "active",
                    "created": now,
                    "modified": now,
                }
                for row in beyond
            ],
        )
    return len(beyond)


_DUET = sa.select(duet).where(duet.c.report_id == sa.bindparam("report_id"))
_RESULTS = (
    sa.select(
        duet_result,
        alert.c.uuid.label("alert_uuid"),
        alert.c.status.label("alert_status"),
        threshold.c.uuid.label("margin_threshold_uuid"),
        model.c.uuid.label("margin_model_uuid"),
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
    .outerjoin(alert, alert.c.duet_result_id == duet_result.c.id)
    .outerjoin(model, model.c.id == duet_result.c.margin_model_id)
    .outerjoin(threshold, threshold.c.id == model.c.threshold_id)
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
        alert.c.uuid.label("alert_uuid"),
        alert.c.status.label("alert_status"),
    )
    .select_from(report)
    .join(duet, duet.c.report_id == report.c.id)
    .join(duet_result, duet_result.c.duet_id == duet.c.id)
    .outerjoin(alert, alert.c.duet_result_id == duet_result.c.id)
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
    alert_uuid: uuid.UUID | None
    """The alert a ratio beyond its margin raised (with its ``alert_status``)."""
    alert_status: str | None


assert DuetPoint._fields == tuple(c.name for c in _DUET_POINTS.selected_columns)


def duet_points(conn: Connection, query: PerfQuery) -> list[DuetPoint]:
    """The duet ratios of the perf query's branches, testbeds, benchmarks and measures in its
    time range, oldest first: the perf view shows them apart from the absolute points. One
    statement, from the range's reports through their duet (one per report)."""
    return [DuetPoint._make(row) for row in conn.execute(_DUET_POINTS, query_params(query))]
