"""Project-scoped job reads and lists, cancellation and rerun."""

from __future__ import annotations

import uuid
from typing import Any

from fastapi import APIRouter, Request, Response
from sqlalchemy.engine import Connection

from benchrunner.core.states import FINISHED
from benchrunner.core.templates import TemplateError
from benchrunner.protocol import JsonJobOutput
from benchrunner.server.access import project_access
from benchrunner.server.channel.lifecycle import Lifecycle
from benchrunner.server.context import ServerContext
from benchrunner.server.http.errors import bad_request, conflict, not_found
from benchrunner.server.processing.outputs import OutputMissing, UnusableOutput, load_job_output
from benchrunner.server.routes.deps import Ctx, Life, MaybeUser, Page, origin_of
from benchrunner.server.routes.job_filters import JobListQuery, job_filter
from benchrunner.server.store import accounts, job_reads, jobs, registry, reruns, runners
from benchrunner.server.store.accounts import ProjectRow, UserRow
from benchrunner.server.store.job_reads import JobDetail
from benchrunner.server.store.jobs import JobRow, Origin
from benchrunner.server.submission.backpressure import check_backlog
from benchrunner.server.views.resources import full_report_view, job_view

router = APIRouter(tags=["jobs"])


def job_in_project(
    conn: Connection,
    viewer: UserRow | None,
    project: str,
    ref: str,
    *,
    write: bool,
    found_project: ProjectRow | None = None,
) -> JobDetail:
    """The job (with its spec, runner and report), or 404 if it is not in a project the
    viewer may see (403 if it may not change it and ``write``); ``found_project`` is the
    project if already read."""
    row = project_access(conn, viewer, project, write=write, found=found_project)
    try:
        job_uuid = uuid.UUID(ref)
    except ValueError:
        raise not_found("job", ref) from None
    found = job_reads.job_detail(conn, job_uuid)
    if found is None or found.job.project_id != row.id:
        raise not_found("job", ref)
    return found


async def job_output(ctx: ServerContext, job: JobRow) -> dict[str, Any] | None:
    if job.status not in FINISHED:
        return None
    try:
        output = await load_job_output(ctx, job)
    except OutputMissing:
        return None
    except UnusableOutput as exc:  # shown as the output's error, never a 500
        output = JsonJobOutput(error=str(exc))
    return output.model_dump(mode="json")


async def full_job_view(
    ctx: ServerContext, project: str, ref: str, viewer: UserRow | None
) -> dict[str, Any]:
    """The job's JSON with its events (and, once finished, its output), in a fixed number of
    queries whatever the number of events."""

    def unit(conn: Connection) -> tuple[JobRow, dict[str, Any]]:
        found = job_in_project(conn, viewer, project, ref, write=False)
        events = job_reads.job_events(conn, found.job.id)
        return found.job, _view(found, events)

    job, view = await ctx.db.read(unit)
    output = await job_output(ctx, job)
    if output is not None:
        view["output"] = output
    return view


def _view(found: JobDetail, events: list[Any] | None = None) -> dict[str, Any]:
    return job_view(
        found.job,
        spec=found.spec,
        runner_uuid=found.runner_uuid,
        report_uuid=found.report_uuid,
        events=events,
    )


@router.get("/v0/projects/{project}/jobs")
async def list_jobs(
    project: str,
    user: MaybeUser,
    ctx: Ctx,
    response: Response,
    pages: Page,
    query: JobListQuery,
) -> list[dict[str, Any]]:
    """A page of the project's jobs, filtered, sorted and counted in the database."""

    def unit(conn: Connection) -> tuple[list[dict[str, Any]], int]:
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
        return [_view(detail) for detail in found], total

    views, total = await ctx.db.read(unit)
    response.headers["X-Total-Count"] = str(total)
    return views


@router.get("/v0/projects/{project}/jobs/{job}")
async def get_job(project: str, job: str, user: MaybeUser, ctx: Ctx) -> dict[str, Any]:
    return await full_job_view(ctx, project, job, user)


@router.post("/v0/projects/{project}/jobs/{job}/cancel")
async def cancel_job(
    project: str, job: str, user: MaybeUser, ctx: Ctx, life: Life
) -> dict[str, Any]:
    await cancel(ctx, life, project, job, user)
    return await full_job_view(ctx, project, job, user)


async def cancel(
    ctx: ServerContext, life: Lifecycle, project: str, job: str, user: UserRow | None
) -> None:
    """Cancel a pending, claimed or running job as ``user`` (the API and the console alike):
    404 when the job is not in a project the user may see, 403 when it may not change it,
    409 when the job has already finished."""
    found = await ctx.db.read(lambda conn: job_in_project(conn, user, project, job, write=True))
    actor = user.email if user else "anonymous"
    if not await life.cancel(found.job, actor):
        current = await ctx.db.read(jobs.job_get, found.job.id)
        state = current.status.wire if current else "gone"
        raise conflict(
            f"job {job} is already {state}; only pending, claimed or running jobs can be canceled"
        )


@router.post("/v0/projects/{project}/jobs/{job}/rerun", status_code=201)
async def rerun_job(
    project: str, job: str, request: Request, user: MaybeUser, ctx: Ctx, life: Life
) -> dict[str, Any]:
    """A finished job submitted again: a new report and job with the same config, answered
    as ``POST /v0/run`` answers. 409 while the job is in flight; 429 over a backlog cap."""
    rerun = await submit_rerun(ctx, life, project, job, user, origin_of(request, user))
    return await ctx.db.read(full_report_view, rerun.report_id, rerun.job_uuid)


async def submit_rerun(
    ctx: ServerContext,
    life: Lifecycle,
    project: str,
    job: str,
    user: UserRow | None,
    origin: Origin,
) -> reruns.Rerun:
    """Submit a finished job again as ``user`` (the API and the console alike): 404/403 as
    for a cancel, 409 while the job is in flight, 400 when what it ran is gone, 429 over the
    organization's backlog cap."""

    def unit(conn: Connection) -> tuple[reruns.Rerun, int]:
        old = job_in_project(conn, user, project, job, write=True).job
        if old.status not in FINISHED:
            raise conflict(
                f"job {job} is still {old.status.wire}; only a finished job can be rerun "
                "(wait for it to finish, or cancel it first)"
            )
        _check_rerunnable(conn, ctx, old)
        org, priority = accounts.organization_for_job(conn, old.organization_id)
        check_backlog(conn, ctx.settings, org.id, org.slug)
        user_id = user.id if user else None
        rerun = reruns.job_rerun(conn, old, priority, origin, user_id, ctx.clock.now())
        return rerun, old.spec_id

    rerun, spec_id = await ctx.db.write(unit)
    life.wakeups.job_created(spec_id)
    return rerun


def _check_rerunnable(conn: Connection, ctx: ServerContext, old: JobRow) -> None:
    """400 when what the job ran is gone: its spec archived, its template or image removed."""
    if runners.spec_by_id(conn, old.spec_id).archived is not None:
        raise bad_request(f"job {old.uuid}'s spec is archived: it cannot run again")
    config = old.config
    if config.template is not None:
        try:
            ctx.templates.get(config.template)
        except TemplateError as exc:
            raise bad_request(f"job {old.uuid} cannot run again: {exc}") from None
    elif config.digest is not None and not registry.manifest_exists(
        conn, old.project_id, config.digest
    ):
        raise bad_request(f"job {old.uuid}'s image {config.digest} is no longer in the registry")
