"""Hardware specs: what jobs ask for and runners offer (server admins, as in the API); one
spec's page with the runners serving it and its latest jobs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from sqlalchemy.engine import Connection

from benchrunner.server.access import require_admin_viewer
from benchrunner.server.console.runner_lines import RunnerLine, runner_lines
from benchrunner.server.console.templating import render
from benchrunner.server.console.viewer import CurrentViewer, Viewer
from benchrunner.server.http.deps import Ctx
from benchrunner.server.runners.admin import spec_or_404
from benchrunner.server.store import activity, runners
from benchrunner.server.store.activity import JobSummary

router = APIRouter()

RECENT_JOBS = 20
"""How many of the jobs asking for a spec its page lists."""


@dataclass(frozen=True)
class SpecPage:
    spec: Any
    runners: list[RunnerLine]
    jobs: list[JobSummary]


def _spec_page(conn: Connection, viewer: Viewer, ref: str, connected: frozenset[int]) -> SpecPage:
    """The spec, its runners with their state, and its latest jobs: five small queries."""
    row = spec_or_404(conn, ref)
    serving = runners.spec_runners(conn, row.id)
    lines = runner_lines(conn, serving, connected, with_specs=False)
    jobs = activity.recent_jobs(conn, viewer.user, RECENT_JOBS, spec_id=row.id)
    return SpecPage(row, lines, jobs)


@router.get("/console/specs", response_class=HTMLResponse)
async def specs_page(request: Request, viewer: CurrentViewer, ctx: Ctx) -> HTMLResponse:
    require_admin_viewer(viewer.user, "specs")
    rows = await ctx.db.read(lambda conn: runners.spec_list(conn, archived=False))
    return render(request, viewer, "specs.html", {"specs": rows})


@router.get("/console/specs/{spec}", response_class=HTMLResponse)
async def spec_page(spec: str, request: Request, viewer: CurrentViewer, ctx: Ctx) -> HTMLResponse:
    require_admin_viewer(viewer.user, "specs")
    connected = request.app.state.hub.connected_runner_ids()
    found = await ctx.db.read(_spec_page, viewer, spec, connected)
    return render(request, viewer, "spec.html", {"page": found})
