"""Project-scoped job reads and lists, cancellation (``channel/cancels.py``) and rerun
(``submission/reruns.py``)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response
from sqlalchemy.engine import Connection

from benchrunner.api.jobs import Job
from benchrunner.api.reports import RunAnswer
from benchrunner.protocol import JsonJobOutput
from benchrunner.server.access import job_access, project_access
from benchrunner.server.channel.cancels import cancel
from benchrunner.server.context import ServerContext
from benchrunner.server.http.answers import ANSWERED, answered
from benchrunner.server.http.job_queries import JobListQuery, job_filter
from benchrunner.server.processing.outputs import shown_output
from benchrunner.server.routes.deps import Ctx, Life, MaybeUser, Page, Svc, origin_of
from benchrunner.server.store import job_reads
from benchrunner.server.store.accounts import UserRow
from benchrunner.server.store.job_reads import JobDetail
from benchrunner.server.store.jobs import JobRow
from benchrunner.server.submission.reruns import submit_rerun
from benchrunner.server.views.report_json import full_report_view
from benchrunner.server.views.resources import job_view

router = APIRouter(tags=["jobs"])


async def full_job(ctx: ServerContext, project: str, ref: str, viewer: UserRow | None) -> Job:
    """The job with its events (and, once finished, its output), in a fixed number of
    queries whatever the number of events."""

    def unit(conn: Connection) -> tuple[JobRow, JobDetail, list[Any]]:
        found = job_access(conn, viewer, project, ref, write=False)
        return found.job, found, job_reads.job_events(conn, found.job.id)

    job, found, events = await ctx.db.read_snapshot(unit)
    return _answer(found, events, await shown_output(ctx, job))


def _answer(
    found: JobDetail, events: list[Any] | None = None, output: JsonJobOutput | None = None
) -> Job:
    return job_view(
        found.job,
        spec=found.spec,
        runner_uuid=found.runner_uuid,
        report_uuid=found.report_uuid,
        events=events,
        output=output,
    )


@router.get("/v0/projects/{project}/jobs", **ANSWERED)
async def list_jobs(
    project: str,
    user: MaybeUser,
    ctx: Ctx,
    response: Response,
    pages: Page,
    query: JobListQuery,
) -> list[Job]:
    """A page of the project's jobs, filtered, sorted and counted in the database."""

    def unit(conn: Connection) -> tuple[list[Job], int]:
        row = project_access(conn, user, project, write=False)
        found, total = job_reads.job_page(
            conn,
            row.id,
            job_filter(conn, query, row.id),
            sort=query.sort,
            ascending=query.direction == "asc",
            limit=pages.per_page,
            offset=pages.offset,
        )
        return [_answer(detail) for detail in found], total

    answers, total = await ctx.db.read(unit)
    response.headers["X-Total-Count"] = str(total)
    return answers


@router.get("/v0/projects/{project}/jobs/{job}", **ANSWERED)
async def get_job(project: str, job: str, user: MaybeUser, ctx: Ctx) -> Job:
    return await full_job(ctx, project, job, user)


@router.post("/v0/projects/{project}/jobs/{job}/cancel", **ANSWERED)
async def cancel_job(project: str, job: str, user: MaybeUser, ctx: Ctx, life: Life) -> Job:
    await cancel(ctx, life, project, job, user)
    return await full_job(ctx, project, job, user)


@router.post("/v0/projects/{project}/jobs/{job}/rerun", status_code=201, **ANSWERED)
async def rerun_job(
    project: str, job: str, request: Request, user: MaybeUser, ctx: Ctx, services: Svc
) -> RunAnswer:
    """A finished job submitted again: a new report and job with the same config, answered
    as ``POST /v0/run`` answers. 409 while the job is in flight; 429 over a backlog cap."""
    rerun = await submit_rerun(ctx, services, project, job, user, origin_of(request, user))
    return answered(RunAnswer, await ctx.db.read(full_report_view, rerun.report_id, rerun.job_uuid))
