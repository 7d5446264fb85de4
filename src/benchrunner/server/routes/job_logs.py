"""A job's live log: pages by offset (docs/decisions/live-logs.md) and a follow stream (server-sent
events).

Both are readable by whoever may read the job (``GET .../jobs/{job}``)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import StreamingResponse
from sqlalchemy.engine import Connection

from benchrunner.api.jobs import JobLogPage
from benchrunner.core.log_paging import DEFAULT_LIMIT, MAX_LIMIT, MIN_LIMIT, OffsetError
from benchrunner.server.access import job_access
from benchrunner.server.http.answers import ANSWERED, answered
from benchrunner.server.http.errors import bad_request
from benchrunner.server.http.job_queries import Offset
from benchrunner.server.logs.job_logs import LogPage, follow, log_page
from benchrunner.server.routes.deps import Ctx, MaybeUser

router = APIRouter(tags=["jobs"])


@router.get("/v0/projects/{project}/jobs/{job}/logs", **ANSWERED)
async def get_job_logs(
    project: str,
    job: str,
    user: MaybeUser,
    ctx: Ctx,
    offset: Offset = 0,
    limit: Annotated[
        int, Query(ge=MIN_LIMIT, le=MAX_LIMIT, description="most bytes of content returned")
    ] = DEFAULT_LIMIT,
) -> JobLogPage:
    """The job's log (stdout and stderr as they came, redacted) from ``offset``: at most
    ``limit`` bytes of UTF-8 ``content``, never a split character; ``next_offset`` is where the
    next page starts and ``is_complete`` says the job has finished and nothing follows."""

    def unit(conn: Connection) -> LogPage:
        row = job_access(conn, user, project, job, write=False).job
        try:
            return log_page(conn, ctx.log_index, row, offset, limit)
        except OffsetError as exc:
            raise bad_request(str(exc)) from None

    page = await ctx.db.read(unit)
    return answered(JobLogPage, page.view())


@router.get(
    "/v0/projects/{project}/jobs/{job}/logs/follow",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}}},
)
async def follow_job_logs(
    project: str, job: str, user: MaybeUser, ctx: Ctx, offset: Offset = 0
) -> StreamingResponse:
    """Server-sent events: ``log`` events (``offset``, ``next_offset``, ``content``) as the
    job's log grows from ``offset``, then one ``end`` event (``next_offset``, ``status``) when
    the job has finished."""
    row = await ctx.db.read(lambda conn: job_access(conn, user, project, job, write=False).job)
    return StreamingResponse(
        follow(ctx, row, offset),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )
