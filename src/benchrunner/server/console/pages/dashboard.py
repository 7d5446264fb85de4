"""The dashboard: the queue, the runners connected, recent jobs and alerts."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from benchrunner.server.console.templating import render
from benchrunner.server.console.viewer import CurrentViewer
from benchrunner.server.routes.deps import Ctx
from benchrunner.server.store.queue_stats import queue_stats

router = APIRouter()


@router.get("/console", response_class=HTMLResponse)
async def dashboard(request: Request, viewer: CurrentViewer, ctx: Ctx) -> HTMLResponse:
    stats = await ctx.db.read(queue_stats)
    return render(request, viewer, "dashboard.html", {"queue": stats.by_status()})
