"""The per-job transport (docs/decisions/per-job-transport.md): ``POST /v0/runners/{runner}/jobs``
claims a job (long-poll) and ``WebSocket /v0/runners/{runner}/jobs/{job}`` reports it. The same core
as the channel: the dispatcher's claim, the lifecycle's transitions and timeouts, the same session
for the report.
"""

from __future__ import annotations

import logging
import math
import uuid

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse

from benchrunner.api.jobs import ClaimRequest
from benchrunner.core.states import IN_FLIGHT
from benchrunner.protocol import (
    EXTENSIONS_HEADER,
    NONCE_EXTENSION,
    TEMPLATE_EXTENSION,
    JsonClaimedJob,
    parse_extensions_header,
)
from benchrunner.server.channel.job_socket import JobSocketSession
from benchrunner.server.channel.lifecycle import Lifecycle
from benchrunner.server.channel.long_poll import claim_or_nothing
from benchrunner.server.channel.runner_channel import ChannelHub
from benchrunner.server.channel.runner_session import (
    RunnerSocket,
    authenticate,
    runner_socket_route,
)
from benchrunner.server.http.errors import ApiError, unauthorized
from benchrunner.server.http.sliding_window import SlidingWindow
from benchrunner.server.routes.deps import Ctx, Life
from benchrunner.server.store import jobs

router = APIRouter(tags=["runner agent"])
log = logging.getLogger(__name__)

CLAIM_WINDOW = 60.0
REFUSED_RUNNER = "invalid runner token, unknown runner, or archived runner"


def claim_window(limit: int) -> SlidingWindow:
    """Each runner's claim requests of the last minute (kept for up to 100 000 runners)."""
    return SlidingWindow(limit, CLAIM_WINDOW, max_keys=100_000)


def _check_rate(request: Request, ctx: Ctx, runner_slug: str, runner_id: int) -> None:
    limit = ctx.settings.runner_claims_per_minute
    if not limit:
        return
    window: SlidingWindow = request.app.state.claim_window
    now = ctx.monotonic.monotonic()
    wait = window.retry_after((str(runner_id),), now)
    if wait > 0:
        seconds = max(1, math.ceil(wait))
        raise ApiError(
            429,
            f"runner {runner_slug!r} claims too often: at most {limit} claims a minute "
            f"(runner_claims_per_minute); try again in {seconds} s",
            error_code="too_many_requests",
            headers={"Retry-After": str(seconds)},
        )
    window.record((str(runner_id),), now)


@router.post(
    "/v0/runners/{runner}/jobs",
    response_model=JsonClaimedJob | None,
    summary="Claim a job (long-poll)",
    description="Waits up to poll_timeout seconds (default 30, at most 600) for a job this "
    "runner may run; answers the claimed job, or null. Authenticated with the runner's key.",
)
async def claim_job(
    request: Request, runner: str, ctx: Ctx, life: Life, body: ClaimRequest | None = None
) -> Response:
    row = await authenticate(request, life, runner)
    if row is None:
        raise unauthorized(REFUSED_RUNNER)
    _check_rate(request, ctx, row.slug, row.id)
    poll_timeout = (body or ClaimRequest()).poll_timeout
    announced = parse_extensions_header(request.headers.get(EXTENSIONS_HEADER))
    templates = TEMPLATE_EXTENSION in announced
    assigned = await claim_or_nothing(request, life, row, poll_timeout, templates=templates)
    if assigned is None:
        return JSONResponse(None)
    # The nonce is ours (extension ``nonce``): left out for a runner that did not announce it.
    hidden = set() if NONCE_EXTENSION in announced else {"nonce"}
    return JSONResponse(assigned.claimed().model_dump(mode="json", exclude=hidden))


def _denial(http_status: int, message: str, **more: str) -> JSONResponse:
    return JSONResponse({"message": message, **more}, status_code=http_status)


async def job_socket(websocket: RunnerSocket) -> None:
    runner: str = websocket.path_params["runner"]
    job: str = websocket.path_params["job"]
    life: Lifecycle = websocket.app.state.lifecycle
    hub: ChannelHub = websocket.app.state.hub
    row = await authenticate(websocket, life, runner)
    if row is None:
        await websocket.send_denial_response(_denial(401, REFUSED_RUNNER))
        return
    try:
        job_uuid = uuid.UUID(job)
    except ValueError:
        job_uuid = None
    found = None if job_uuid is None else await life.ctx.db.read(jobs.job_get_by_uuid, job_uuid)
    if found is None or found.runner_id != row.id:
        await websocket.send_denial_response(
            _denial(404, f"job {job!r} not found among runner {row.slug!r}'s jobs")
        )
        return
    if found.status not in IN_FLIGHT:
        await websocket.send_denial_response(
            _denial(
                409,
                f"job {found.uuid} is {found.status.wire}: "
                "only a claimed or running job accepts its runner's socket",
                status=found.status.wire,
            )
        )
        return
    await websocket.accept()
    extensions = parse_extensions_header(websocket.headers.get(EXTENSIONS_HEADER))
    session = JobSocketSession(websocket, row, life, found, extensions)
    hub.open_job_socket(session, found.id)
    log.info("runner %s connected for job %s", row.slug, found.uuid)
    try:
        await session.run()
    finally:
        hub.discard(session)
        log.info("runner %s disconnected from job %s", row.slug, found.uuid)


router.routes.append(runner_socket_route("/v0/runners/{runner}/jobs/{job}", job_socket))
