"""Calibrations: their rows, the reports their runs made, the values those reports hold and
the noise seen on their spec since."""

from __future__ import annotations

import datetime as dt
import uuid
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.core.states import JobStatus
from benchrunner.server.store.tables import (
    benchmark,
    branch,
    calibration,
    calibration_report,
    job,
    measure,
    metric,
    report,
    spec,
    testbed,
)

STALE_LOOKBACK = 500
"""The latest reports of the spec read for a drift: enough for any check between two reads."""


@dataclass(frozen=True)
class NewCalibration:
    project_id: int
    spec_id: int
    user_id: int | None
    branch_id: int
    target_branch_id: int
    testbed_id: int
    runs: int
    false_alarm_rate: float


def calibration_add(
    conn: Connection, new: NewCalibration, calibration_uuid: uuid.UUID, now: dt.datetime
) -> int:
    row = {**new.__dict__, "uuid": calibration_uuid, "created": now}
    return int(conn.execute(calibration.insert().returning(calibration.c.id), row).scalar_one())


def calibration_report_add(conn: Connection, calibration_id: int, report_id: int) -> None:
    conn.execute(
        calibration_report.insert(), {"calibration_id": calibration_id, "report_id": report_id}
    )


_target = branch.alias("target")
_own = branch.alias("own")
_COLUMNS = (
    calibration,
    spec.c.slug.label("spec_slug"),
    spec.c.uuid.label("spec_uuid"),
    _own.c.name.label("branch_name"),
    _target.c.name.label("target_branch_name"),
    testbed.c.name.label("testbed_name"),
)
_FROM = (
    calibration.join(spec, spec.c.id == calibration.c.spec_id)
    .join(_own, _own.c.id == calibration.c.branch_id)
    .join(_target, _target.c.id == calibration.c.target_branch_id)
    .join(testbed, testbed.c.id == calibration.c.testbed_id)
)


def calibration_get(conn: Connection, project_id: int, ref: str) -> Any | None:
    """The project's calibration with this UUID (None if none)."""
    try:
        wanted = uuid.UUID(ref)
    except ValueError:
        return None
    query = (
        sa.select(*_COLUMNS)
        .select_from(_FROM)
        .where(calibration.c.project_id == project_id, calibration.c.uuid == wanted)
    )
    return conn.execute(query).first()


def calibration_list(
    conn: Connection, project_id: int, limit: int, offset: int
) -> tuple[list[Any], int]:
    """The project's calibrations, newest first, and how many there are."""
    query = (
        sa.select(*_COLUMNS)
        .select_from(_FROM)
        .where(calibration.c.project_id == project_id)
        .order_by(calibration.c.id.desc())
        .limit(limit)
        .offset(offset)
    )
    total = conn.execute(
        sa.select(sa.func.count())
        .select_from(calibration)
        .where(calibration.c.project_id == project_id)
    ).scalar_one()
    return list(conn.execute(query)), int(total)


def calibration_applied(conn: Connection, calibration_id: int, now: dt.datetime) -> None:
    conn.execute(calibration.update().where(calibration.c.id == calibration_id).values(applied=now))


@dataclass(frozen=True)
class RunState:
    report_uuid: str
    job_uuid: str | None
    status: JobStatus | None
    created: dt.datetime


def calibration_runs(conn: Connection, calibration_id: int) -> list[RunState]:
    """Each run's report and job, in the order they were submitted."""
    query = (
        sa.select(report.c.uuid, report.c.created, job.c.uuid.label("job_uuid"), job.c.status)
        .select_from(
            calibration_report.join(report, report.c.id == calibration_report.c.report_id).join(
                job, job.c.report_id == report.c.id, isouter=True
            )
        )
        .where(calibration_report.c.calibration_id == calibration_id)
        .order_by(report.c.id)
    )
    return [
        RunState(
            str(row.uuid),
            None if row.job_uuid is None else str(row.job_uuid),
            None if row.status is None else JobStatus(row.status),
            row.created,
        )
        for row in conn.execute(query)
    ]


@dataclass(frozen=True)
class Series:
    benchmark_id: int
    measure_id: int
    benchmark: str
    measure_slug: str
    measure_name: str
    units: str
    values: list[float]
    """Every metric's value: one an iteration of each run, as later runs are judged."""
    runs: int
    """The runs that gave a value."""


def calibration_values(conn: Connection, calibration_id: int) -> list[Series]:
    """The runs' values of every benchmark and measure, each iteration's its own."""
    query = (
        sa.select(
            benchmark.c.id.label("benchmark_id"),
            measure.c.id.label("measure_id"),
            benchmark.c.name,
            measure.c.slug,
            measure.c.name.label("measure_name"),
            measure.c.units,
            metric.c.report_id,
            metric.c.value,
        )
        .select_from(
            calibration_report.join(metric, metric.c.report_id == calibration_report.c.report_id)
            .join(benchmark, benchmark.c.id == metric.c.benchmark_id)
            .join(measure, measure.c.id == metric.c.measure_id)
        )
        .where(calibration_report.c.calibration_id == calibration_id)
        .order_by(benchmark.c.name, measure.c.slug, metric.c.report_id, metric.c.iteration)
    )
    grouped: dict[tuple[int, int, str, str, str, str], list[float]] = defaultdict(list)
    reports_of: dict[tuple[int, int, str, str, str, str], set[int]] = defaultdict(set)
    for row in conn.execute(query):
        key = (row.benchmark_id, row.measure_id, row.name, row.slug, row.measure_name, row.units)
        grouped[key].append(float(row.value))
        reports_of[key].add(int(row.report_id))
    return [Series(*key, values, len(reports_of[key])) for key, values in grouped.items()]


def calibration_runs_cut(conn: Connection, calibration_id: int, runs: int) -> None:
    """The calibration has ``runs`` runs: fewer than asked, when submitting the rest failed."""
    conn.execute(calibration.update().where(calibration.c.id == calibration_id).values(runs=runs))


def spec_noise_since(conn: Connection, spec_id: int, since: dt.datetime) -> list[str]:
    """The stored noise figures of the spec's reports created after ``since``, newest first."""
    query = (
        sa.select(report.c.noise)
        .select_from(report.join(job, job.c.report_id == report.c.id))
        .where(job.c.spec_id == spec_id, report.c.created > since, report.c.noise.is_not(None))
        .order_by(report.c.id.desc())
        .limit(STALE_LOOKBACK)
    )
    return [str(noise) for noise in conn.execute(query).scalars()]
