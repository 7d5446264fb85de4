"""Server-wide reads: health and the approved templates."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from fastapi import APIRouter, Request
from sqlalchemy.engine import Connection

from benchrunner import __version__
from benchrunner.core.states import JobStatus
from benchrunner.server.routes.deps import Ctx, Life
from benchrunner.server.store.tables import in_flight, job

router = APIRouter(tags=["server"])


def _count_where(condition: sa.ColumnElement[bool]) -> sa.Select[Any]:
    return sa.select(job.c.status, sa.func.count()).where(condition).group_by(job.c.status)


_QUEUE_DEPTH = sa.union_all(
    # Each condition written as a partial index on ``job`` has it, so that each count reads
    # that index, not the whole table with every job ever run.
    _count_where(job.c.status == sa.literal_column("0")),
    _count_where(in_flight(job.c.status)),
    _count_where(job.c.status == sa.literal_column("3")),
)


def _queue_depth(conn: Connection) -> dict[str, int]:
    rows = conn.execute(_QUEUE_DEPTH)
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
