"""Jobs as their JSON shows them: each job read with its spec, runner and report in one query,
and pages of a project's jobs filtered, sorted and counted in the database."""

from __future__ import annotations

import datetime as dt
import types
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, Literal
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.core.states import JobStatus
from benchrunner.server.store.jobs import JOBS, JobRow
from benchrunner.server.store.tables import branch, job, job_event, report, runner, spec, testbed

JobSort = Literal["created", "modified"]

_SPEC_PREFIX = "spec__"  # not "spec_": job.spec_id would clash with spec.id
_DETAILED = (
    JOBS.add_columns(
        *(column.label(f"{_SPEC_PREFIX}{column.name}") for column in spec.c),
        runner.c.uuid.label("runner_uuid"),
        report.c.uuid.label("report_uuid"),
    )
    .join(spec, spec.c.id == job.c.spec_id)
    .outerjoin(runner, runner.c.id == job.c.runner_id)
)


@dataclass(frozen=True)
class JobDetail:
    """A job and what its JSON names: the spec row, the runner's and the report's UUIDs."""

    job: JobRow
    spec: Any
    runner_uuid: UUID | None
    report_uuid: UUID

    @classmethod
    def from_row(cls, row: Any) -> JobDetail:
        spec_row = types.SimpleNamespace(
            **{column.name: getattr(row, f"{_SPEC_PREFIX}{column.name}") for column in spec.c}
        )
        return cls(JobRow.from_row(row), spec_row, row.runner_uuid, row.report_uuid)


def job_detail(conn: Connection, job_uuid: UUID) -> JobDetail | None:
    row = conn.execute(_DETAILED.where(job.c.uuid == job_uuid)).first()
    return JobDetail.from_row(row) if row else None


def job_events(conn: Connection, job_id: int) -> list[Any]:
    """A job's events, oldest first (one query, however many there are)."""
    return list(
        conn.execute(
            sa.select(job_event)
            .where(job_event.c.job_id == job_id)
            .order_by(job_event.c.created, job_event.c.id)
        )
    )


@dataclass(frozen=True)
class JobFilter:
    """Which of a project's jobs a list shows; an empty or None field does not narrow it.
    ``created_after`` is inclusive and ``created_before`` exclusive, so adjacent windows
    never share a job."""

    statuses: frozenset[JobStatus] = frozenset()
    spec_id: int | None = None
    runner_id: int | None = None
    branch_id: int | None = None
    created_after: dt.datetime | None = None
    created_before: dt.datetime | None = None

    def where(self, project_id: int) -> list[sa.ColumnElement[bool]]:
        clauses: list[sa.ColumnElement[bool]] = [report.c.project_id == project_id]
        if self.statuses:
            clauses.append(job.c.status.in_(sorted(int(s) for s in self.statuses)))
        if self.spec_id is not None:
            clauses.append(job.c.spec_id == self.spec_id)
        if self.runner_id is not None:
            clauses.append(job.c.runner_id == self.runner_id)
        if self.branch_id is not None:
            clauses.append(report.c.branch_id == self.branch_id)
        if self.created_after is not None:
            clauses.append(job.c.created >= self.created_after)
        if self.created_before is not None:
            clauses.append(job.c.created < self.created_before)
        return clauses


def job_page(
    conn: Connection,
    project_id: int,
    wanted: JobFilter,
    *,
    sort: JobSort,
    ascending: bool,
    limit: int,
    offset: int,
) -> tuple[list[JobDetail], int]:
    """One page of the project's jobs that match, in order (the job id breaks ties in the
    same direction, so pages never overlap), and how many match in all: three queries."""
    where = wanted.where(project_id)
    of_project = job.join(report, report.c.id == job.c.report_id)
    total = conn.execute(
        sa.select(sa.func.count()).select_from(of_project).where(*where)
    ).scalar_one()
    keys = (job.c[sort], job.c.id)
    order = [key.asc() if ascending else key.desc() for key in keys]
    # The page's ids first, from job and report alone: joined to the one-row spec, runner and
    # project tables, the planners sort every job of the project before taking the page.
    ids = list(
        conn.execute(
            sa.select(job.c.id)
            .select_from(of_project)
            .where(*where)
            .order_by(*order)
            .limit(limit)
            .offset(offset)
        ).scalars()
    )
    if not ids:
        return [], int(total)
    rows = conn.execute(_DETAILED.where(job.c.id.in_(ids)).order_by(*order))
    return [JobDetail.from_row(r) for r in rows], int(total)


@dataclass(frozen=True)
class JobPlace:
    """Where a job ran, in names: its report's branch and testbed and its runner's slug (if
    claimed); and its report's noise verdict (JSON, ``server.processing.noise``; None until
    processed or without the guard)."""

    branch: str
    testbed: str
    runner: str | None
    noise: str | None = None


def job_places(conn: Connection, job_ids: Collection[int]) -> dict[int, JobPlace]:
    """Each job's branch and testbed names, runner slug and report's noise verdict by job id (a
    page of jobs: one query)."""
    if not job_ids:
        return {}
    rows = conn.execute(
        sa.select(
            job.c.id,
            branch.c.name.label("branch"),
            testbed.c.name.label("testbed"),
            runner.c.slug,
            report.c.noise,
        )
        .join(report, report.c.id == job.c.report_id)
        .join(branch, branch.c.id == report.c.branch_id)
        .join(testbed, testbed.c.id == report.c.testbed_id)
        .outerjoin(runner, runner.c.id == job.c.runner_id)
        .where(job.c.id.in_(sorted(job_ids)))
    )
    return {row.id: JobPlace(row.branch, row.testbed, row.slug, row.noise) for row in rows}


def project_job_specs_and_runners(conn: Connection, project_id: int) -> tuple[list[str], list[str]]:
    """The slugs of the specs and of the runners the project's jobs have used, by slug: what a
    filter of its jobs can choose from (not every spec and runner of the server)."""
    # One EXISTS probe per spec and runner (a handful) stops at the first job found, where a
    # DISTINCT over the project's jobs would read every one of them.
    of_project = job.join(report, report.c.id == job.c.report_id)
    in_project = report.c.project_id == project_id
    specs = conn.execute(
        sa.select(spec.c.slug)
        .where(sa.exists().select_from(of_project).where(job.c.spec_id == spec.c.id, in_project))
        .order_by(spec.c.slug)
    ).scalars()
    used = conn.execute(
        sa.select(runner.c.slug)
        .where(
            sa.exists().select_from(of_project).where(job.c.runner_id == runner.c.id, in_project)
        )
        .order_by(runner.c.slug)
    ).scalars()
    return list(specs), list(used)
