"""Hardware specs: what jobs ask for and runners offer (server admins, as in the API)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from benchrunner.server.console.permissions import require_admin
from benchrunner.server.console.templating import render
from benchrunner.server.console.viewer import CurrentViewer
from benchrunner.server.routes.deps import Ctx
from benchrunner.server.store import runners

router = APIRouter()


@router.get("/console/specs", response_class=HTMLResponse)
async def specs_page(request: Request, viewer: CurrentViewer, ctx: Ctx) -> HTMLResponse:
    require_admin(viewer, "specs")
    rows = await ctx.db.read(lambda conn: runners.spec_list(conn, archived=False))
    return render(request, viewer, "specs.html", {"specs": rows})
