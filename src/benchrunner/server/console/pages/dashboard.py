"""The dashboard: the queue, the runners connected, recent jobs and alerts (of the projects
the viewer may read)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from sqlalchemy.engine import Connection

from benchrunner.server.console.templating import render
from benchrunner.server.console.viewer import CurrentViewer
from benchrunner.server.http.deps import Ctx
from benchrunner.server.store import activity, runners
from benchrunner.server.store.queue_stats import queue_stats

router = APIRouter()

RECENT = 10


def _connected_names(conn: Connection, connected: frozenset[int]) -> list[str]:
    return [
        r.name for r in runners.runner_list(conn, archived=False, name=None) if r.id in connected
    ]


@router.get("/console", response_class=HTMLResponse)
async def dashboard(request: Request, viewer: CurrentViewer, ctx: Ctx) -> HTMLResponse:
    stats = await ctx.db.read(queue_stats)
    connected = request.app.state.hub.connected_runner_ids()
    names = await ctx.db.read(_connected_names, connected) if viewer.is_admin else []
    jobs = await ctx.db.read(activity.recent_jobs, viewer.user, RECENT)
    alerts = await ctx.db.read(activity.recent_alerts, viewer.user, RECENT)
    context = {
        "queue": stats.by_status(),
        "connected": len(connected),
        "connected_names": names,
        "jobs": jobs,
        "alerts": alerts,
    }
    return render(request, viewer, "dashboard.html", context)
