"""A job's page: config, spec, timeline, log and output; its live part refreshed while the
job runs, its log followed as server-sent events (the logs API's ``follow``)."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, StreamingResponse
from sqlalchemy.engine import Connection

from benchrunner.server.access import job_access
from benchrunner.server.console.job_page import (
    JobFacts,
    LogView,
    job_facts,
    job_log,
    job_output_view,
)
from benchrunner.server.console.templating import render
from benchrunner.server.console.viewer import CurrentViewer, Viewer
from benchrunner.server.http.deps import Ctx
from benchrunner.server.http.job_queries import Offset
from benchrunner.server.logs.job_logs import follow

router = APIRouter()

JOB_PATH = "/console/projects/{project}/jobs/{job:uuid}"


async def detail_response(
    request: Request,
    viewer: Viewer,
    ctx: Ctx,
    project: str,
    job: uuid.UUID,
    *,
    log_offset: int = 0,
    error: str | None = None,
    status_code: int = 200,
) -> HTMLResponse:
    """The whole page; ``error`` (an action that could not be done) shown at its top."""

    def unit(conn: Connection) -> tuple[JobFacts, LogView]:
        facts = job_facts(conn, viewer, project, str(job))
        return facts, job_log(ctx, conn, facts.job, log_offset)

    facts, log = await ctx.db.read_snapshot(unit)
    output = await job_output_view(ctx, facts.job)
    context = {"facts": facts, "log": log, "output": output, "error": error}
    return render(request, viewer, "jobs/detail.html", context, status_code=status_code)


@router.get(JOB_PATH, response_class=HTMLResponse)
async def job_page(
    project: str,
    job: uuid.UUID,
    request: Request,
    viewer: CurrentViewer,
    ctx: Ctx,
    log_offset: Annotated[int, Query(ge=0, le=2**62)] = 0,
) -> HTMLResponse:
    return await detail_response(request, viewer, ctx, project, job, log_offset=log_offset)


@router.get(JOB_PATH + "/fragment", response_class=HTMLResponse)
async def job_live_part(
    project: str, job: uuid.UUID, request: Request, viewer: CurrentViewer, ctx: Ctx
) -> HTMLResponse:
    """Status, actions, timeline and output: what the page swaps in while the job runs."""
    facts = await ctx.db.read_snapshot(job_facts, viewer, project, str(job))
    output = await job_output_view(ctx, facts.job)
    return render(request, viewer, "jobs/live.html", {"facts": facts, "output": output})


@router.get(
    JOB_PATH + "/logs/follow",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}}},
)
async def job_log_follow(
    project: str, job: uuid.UUID, viewer: CurrentViewer, ctx: Ctx, offset: Offset = 0
) -> StreamingResponse:
    """``GET /v0/projects/{project}/jobs/{job}/logs/follow`` for the console's session: the same
    ``log`` and ``end`` events, read with the viewer's permissions."""
    row = await ctx.db.read(
        lambda conn: job_access(conn, viewer.user, project, str(job), write=False).job
    )
    return StreamingResponse(
        follow(ctx, row, offset),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )
