"""Project-scoped job reads and cancellation."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any, Literal

from fastapi import APIRouter, Response
from sqlalchemy.engine import Connection

from benchrunner.core.states import FINISHED, JobStatus
from benchrunner.protocol import JsonJobOutput
from benchrunner.server.blobs import job_output_key
from benchrunner.server.context import ServerContext
from benchrunner.server.errors import bad_request, conflict, not_found
from benchrunner.server.outputs import OutputMissing, UnusableOutput, load_output
from benchrunner.server.routes.deps import (
    Ctx,
    Life,
    MaybeUser,
    Page,
    project_access,
)
from benchrunner.server.store import jobs
from benchrunner.server.store.accounts import UserRow
from benchrunner.server.store.jobs import JobRow
from benchrunner.server.views import job_view

router = APIRouter(tags=["jobs"])


def job_in_project(
    conn: Connection, viewer: UserRow | None, project: str, ref: str, *, write: bool
) -> JobRow:
    row = project_access(conn, viewer, project, write=write)
    try:
        job_uuid = uuid.UUID(ref)
    except ValueError:
        raise not_found("job", ref) from None
    found = jobs.job_get_by_uuid(conn, job_uuid)
    if found is None or found.project_id != row.id:
        raise not_found("job", ref)
    return found


async def job_output(ctx: ServerContext, job: JobRow) -> dict[str, Any] | None:
    if job.status not in FINISHED:
        return None
    key = job_output_key(job.project_uuid, job.uuid)
    try:
        output = await asyncio.to_thread(
            load_output, ctx.blobs, key, ctx.settings.processing_budget()
        )
    except OutputMissing:
        return None
    except UnusableOutput as exc:  # shown as the output's error, never a 500
        output = JsonJobOutput(error=str(exc))
    return output.model_dump(mode="json")


async def full_job_view(ctx: ServerContext, job: JobRow) -> dict[str, Any]:
    def unit(conn: Connection) -> dict[str, Any]:
        spec, runner_uuid, report_uuid = jobs.job_detail_refs(conn, job)
        return job_view(
            job,
            spec=spec,
            runner_uuid=runner_uuid,
            report_uuid=report_uuid,
            events=jobs.job_events(conn, job.id),
        )

    view = await ctx.db.read(unit)
    output = await job_output(ctx, job)
    if output is not None:
        view["output"] = output
    return view


@router.get("/v0/projects/{project}/jobs")
async def list_jobs(
    project: str,
    user: MaybeUser,
    ctx: Ctx,
    response: Response,
    pages: Page,
    status: str | None = None,
    direction: Literal["asc", "desc"] = "desc",
) -> list[dict[str, Any]]:
    try:
        wanted = None if status is None else JobStatus.from_wire(status)
    except ValueError as exc:
        raise bad_request(str(exc)) from None

    def unit(conn: Connection) -> tuple[list[dict[str, Any]], int]:
        row = project_access(conn, user, project, write=False)
        found, total = jobs.job_list_for_project(
            conn,
            row.id,
            status=wanted,
            ascending=direction == "asc",
            limit=pages.per_page,
            offset=pages.offset,
        )
        views = []
        for job in found:
            spec, runner_uuid, report_uuid = jobs.job_detail_refs(conn, job)
            views.append(job_view(job, spec=spec, runner_uuid=runner_uuid, report_uuid=report_uuid))
        return views, total

    views, total = await ctx.db.read(unit)
    response.headers["X-Total-Count"] = str(total)
    return views


@router.get("/v0/projects/{project}/jobs/{job}")
async def get_job(project: str, job: str, user: MaybeUser, ctx: Ctx) -> dict[str, Any]:
    row = await ctx.db.read(lambda conn: job_in_project(conn, user, project, job, write=False))
    return await full_job_view(ctx, row)


@router.post("/v0/projects/{project}/jobs/{job}/cancel")
async def cancel_job(
    project: str, job: str, user: MaybeUser, ctx: Ctx, life: Life
) -> dict[str, Any]:
    row = await ctx.db.read(lambda conn: job_in_project(conn, user, project, job, write=True))
    actor = user.email if user else "anonymous"
    if not await life.cancel(row, actor):
        current = await ctx.db.read(jobs.job_get, row.id)
        state = current.status.wire if current else "gone"
        raise conflict(
            f"job {job} is already {state}; only pending, claimed or running jobs can be canceled"
        )
    updated = await ctx.db.read(jobs.job_get, row.id)
    assert updated is not None
    return await full_job_view(ctx, updated)
