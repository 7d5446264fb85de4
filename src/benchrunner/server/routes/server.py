"""Server-wide reads: health, metrics and the approved templates."""

from __future__ import annotations

import asyncio
import logging

from fastapi import APIRouter, Request, Response

from benchrunner import __version__
from benchrunner.api.server import Health, Template
from benchrunner.server.context import ServerContext
from benchrunner.server.http.answers import ANSWERED, answered_each
from benchrunner.server.metrics import CONTENT_TYPE
from benchrunner.server.routes.deps import Ctx, Svc
from benchrunner.server.scheduling.wakeups import PostgresWakeups
from benchrunner.server.services import Services
from benchrunner.server.store.queue_stats import QueueStats, queue_stats

router = APIRouter(tags=["server"])
metrics_router = APIRouter()
log = logging.getLogger(__name__)

DATABASE_CHECK_TIMEOUT = 5.0


async def _read_queue(ctx: ServerContext) -> QueueStats | None:
    """The queue as the database has it now; None when the database cannot be reached."""
    try:
        async with asyncio.timeout(DATABASE_CHECK_TIMEOUT):
            await asyncio.to_thread(ctx.db.check_reachable)
            return await ctx.db.read(queue_stats)
    except Exception as exc:  # whatever the driver raises, the answer is "unreachable"
        log.warning("the database is unreachable: %s", type(exc).__name__)
        return None


def _listening(services: Services) -> bool | None:
    """Whether the LISTEN connection for wake-ups is up; None on SQLite, which has none."""
    if isinstance(services.wakeups, PostgresWakeups):
        return services.wakeups.listening.is_set()
    return None


@router.get(
    "/v0/server/health",
    responses={
        503: {
            "model": Health,
            "description": "The database cannot be reached; the same body says so",
        },
    },
    **ANSWERED,
)
async def health(ctx: Ctx, services: Svc, request: Request, response: Response) -> Health:
    """This replica's state. ``503`` when the database cannot be reached; ``degraded`` (still
    ``200``) when only the PostgreSQL LISTEN connection is down (wake-ups then wait for the
    safety poll)."""
    stats = await _read_queue(ctx)
    listening = _listening(services)
    status = "unavailable" if stats is None else "degraded" if listening is False else "ok"
    response.status_code = 503 if stats is None else 200
    return Health(
        status=status,
        version=__version__,
        replica=ctx.metrics.replica,
        engine=ctx.db.capabilities.name,
        database_reachable=stats is not None,
        listen_connected=listening,
        queue=None if stats is None else stats.by_status(),
        connected_runners=len(request.app.state.hub.sessions),
        waiting_runners=services.dispatcher.idle,
        sweeper_leader=services.sweeper.leader,
    )


@metrics_router.get("/metrics", include_in_schema=False)
async def metrics(ctx: Ctx, services: Svc, request: Request) -> Response:
    """Prometheus text format. Gauges of shared state are read now; when the database cannot
    be reached they keep their last values and ``benchrunner_database_up`` is 0."""
    found = ctx.metrics
    stats = await _read_queue(ctx)
    found.database_up.set(0 if stats is None else 1)
    if stats is not None:
        found.set_queue_depth(stats.depth)
        found.heartbeat_lag.set(stats.heartbeat_lag(ctx.clock.now()))
    found.connected_runners.set(len(request.app.state.hub.sessions))
    found.sweeper_leader.set(1 if services.sweeper.leader else 0)
    return Response(found.exposition(), media_type=CONTENT_TYPE)


@router.get("/v0/templates", **ANSWERED)
async def list_templates(ctx: Ctx) -> list[Template]:
    return answered_each(Template, [t.describe() for t in ctx.templates.all()])
