"""Server-wide reads: health and the approved templates."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from fastapi import APIRouter, Request
from sqlalchemy.engine import Connection

from benchrunner import __version__
from benchrunner.core.states import JobStatus
from benchrunner.server.routes.deps import Ctx, Life
from benchrunner.server.store.tables import job

router = APIRouter(tags=["server"])


def _queue_depth(conn: Connection) -> dict[str, int]:
    rows = conn.execute(
        sa.select(job.c.status, sa.func.count())
        .where(job.c.status.in_([0, 1, 2, 3]))
        .group_by(job.c.status)
    )
    depth = {
        s.wire: 0
        for s in (JobStatus.PENDING, JobStatus.CLAIMED, JobStatus.RUNNING, JobStatus.COMPLETED)
    }
    for status, count in rows:
        depth[JobStatus(status).wire] = int(count)
    return depth


@router.get("/v0/server/health")
async def health(ctx: Ctx, life: Life, request: Request) -> dict[str, Any]:
    return {
        "status": "ok",
        "version": __version__,
        "engine": "sqlite" if ctx.db.sqlite else "postgresql",
        "queue": await ctx.db.read(_queue_depth),
        "connected_runners": len(request.app.state.hub.sessions),
        "waiting_runners": life.dispatcher.waiting,
        "sweeper_leader": life.sweeper.leader,
    }


@router.get("/v0/templates")
async def list_templates(ctx: Ctx) -> list[dict[str, Any]]:
    return [t.describe() for t in ctx.templates.all()]
