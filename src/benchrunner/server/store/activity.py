"""What is happening now, as the console's dashboard and runners page show it: the latest jobs
and alerts of the projects a viewer may read, and each runner's job in flight."""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.core.states import JobStatus
from benchrunner.server.store.accounts import UserRow, project_visible_to
from benchrunner.server.store.alerts import UNRAISED
from benchrunner.server.store.tables import (
    alert,
    benchmark,
    boundary,
    duet_result,
    in_flight,
    job,
    measure,
    metric,
    project,
    report,
    runner,
    spec,
)


@dataclass(frozen=True)
class JobSummary:
    uuid: UUID
    status: JobStatus
    project_slug: str
    spec_name: str
    runner_name: str | None
    created: dt.datetime
    last_heartbeat: dt.datetime | None


_JOB_SUMMARY = (
    sa.select(
        job.c.uuid,
        job.c.status,
        job.c.created,
        job.c.last_heartbeat,
        project.c.slug.label("project_slug"),
        spec.c.name.label("spec_name"),
        runner.c.name.label("runner_name"),
    )
    .join(report, report.c.id == job.c.report_id)
    .join(project, project.c.id == report.c.project_id)
    .join(spec, spec.c.id == job.c.spec_id)
    .outerjoin(runner, runner.c.id == job.c.runner_id)
)


def _job_summary(row: Any) -> JobSummary:
    m = row._mapping
    return JobSummary(
        m["uuid"],
        JobStatus(m["status"]),
        m["project_slug"],
        m["spec_name"],
        m["runner_name"],
        m["created"],
        m["last_heartbeat"],
    )


def recent_jobs(
    conn: Connection,
    viewer: UserRow | None,
    limit: int,
    *,
    runner_id: int | None = None,
    spec_id: int | None = None,
) -> list[JobSummary]:
    """The newest ``limit`` jobs of the projects ``viewer`` may read; with ``runner_id`` or
    ``spec_id``, only those the runner claimed or that ask for the spec (each an indexed
    column, read newest first)."""
    query = _JOB_SUMMARY.where(project_visible_to(viewer))
    if runner_id is not None:
        query = query.where(job.c.runner_id == runner_id)
    if spec_id is not None:
        query = query.where(job.c.spec_id == spec_id)
    query = query.order_by(job.c.id.desc()).limit(limit)
    return [_job_summary(r) for r in conn.execute(query)]


def runners_current_jobs(
    conn: Connection, runner_ids: Collection[int] | None = None
) -> dict[int, JobSummary]:
    """Each runner's job in flight (claimed or running), by runner id: its newest, should a
    runner hold several; every runner's, or only those of ``runner_ids``. Two queries; only
    one job per runner is read and converted."""
    where = [in_flight(job.c.status), job.c.runner_id.is_not(None)]
    if runner_ids is not None:
        if not runner_ids:
            return {}
        where.append(job.c.runner_id.in_(sorted(runner_ids)))
    newest = conn.execute(
        sa.select(sa.func.max(job.c.id)).where(*where).group_by(job.c.runner_id)
    ).scalars()
    ids = sorted(newest)
    if not ids:
        return {}
    query = _JOB_SUMMARY.add_columns(job.c.runner_id).where(job.c.id.in_(ids))
    return {row.runner_id: _job_summary(row) for row in conn.execute(query)}


@dataclass(frozen=True)
class AlertSummary:
    uuid: UUID
    status: str
    limit: str
    project_slug: str
    benchmark_name: str
    measure_name: str
    value: float
    """The metric's value, or a duet alert's contender/baseline ratio."""
    created: dt.datetime
    duet: bool = False


_RAISED = report.alias("raised")


def recent_alerts(conn: Connection, viewer: UserRow | None, limit: int) -> list[AlertSummary]:
    """The newest ``limit`` alerts of the projects ``viewer`` may read."""
    query = (
        sa.select(
            alert.c.uuid,
            alert.c.status,
            alert.c.limit,
            alert.c.created,
            project.c.slug.label("project_slug"),
            benchmark.c.name.label("benchmark_name"),
            measure.c.name.label("measure_name"),
            sa.func.coalesce(metric.c.value, duet_result.c.ratio).label("value"),
            alert.c.duet_result_id,
        )
        .select_from(alert)
        .outerjoin(boundary, boundary.c.id == alert.c.boundary_id)
        .outerjoin(metric, metric.c.id == boundary.c.metric_id)
        .outerjoin(duet_result, duet_result.c.id == alert.c.duet_result_id)
        .join(
            benchmark,
            benchmark.c.id == sa.func.coalesce(metric.c.benchmark_id, duet_result.c.benchmark_id),
        )
        .join(
            measure, measure.c.id == sa.func.coalesce(metric.c.measure_id, duet_result.c.measure_id)
        )
        .join(_RAISED, _RAISED.c.id == alert.c.report_id)
        .join(project, project.c.id == _RAISED.c.project_id)
        # Held back for confirmation runs: not raised (docs/how-to/thresholds-alerts.md).
        .where(project_visible_to(viewer), alert.c.status.not_in(UNRAISED))
        .order_by(alert.c.id.desc())
        .limit(limit)
    )
    return [
        AlertSummary(
            r.uuid,
            r.status,
            r.limit,
            r.project_slug,
            r.benchmark_name,
            r.measure_name,
            r.value,
            r.created,
            r.duet_result_id is not None,
        )
        for r in conn.execute(query)
    ]
