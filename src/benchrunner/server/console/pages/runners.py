"""Runners: state, last heartbeat, specs and job in flight, refreshed while the page is open;
one runner's page with its latest jobs; for admins, create (the key shown once), rotate the
key, pause, unpause and archive, through the same functions as the API
(:mod:`benchrunner.server.runners.admin`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy.engine import Connection

from benchrunner.server.access import require_admin_viewer
from benchrunner.server.console.csrf import CsrfChecked
from benchrunner.server.console.runner_lines import RunnerLine, runner_line, runner_lines
from benchrunner.server.console.templating import render
from benchrunner.server.console.viewer import CurrentViewer, Viewer
from benchrunner.server.http.deps import Ctx, Svc
from benchrunner.server.http.errors import ApiError
from benchrunner.server.runners import admin as runner_admin
from benchrunner.server.runners.admin import RunnerChanges, runner_or_404
from benchrunner.server.store import activity, runners
from benchrunner.server.store.activity import JobSummary

router = APIRouter()

REFRESH_SECONDS = 2
RECENT_JOBS = 20
"""How many of a runner's latest jobs its page lists."""
NAME_MAX = 64
"""The API's limit on a runner's name; checked here so that the form says so beside the field."""


def _lines(conn: Connection, connected: frozenset[int]) -> list[RunnerLine]:
    rows = runners.runner_list(conn, archived=False, name=None)
    return runner_lines(conn, rows, connected)


@dataclass(frozen=True)
class RunnerPage:
    line: RunnerLine
    specs: list[Any]
    jobs: list[JobSummary]


def _runner_page(
    conn: Connection, viewer: Viewer, ref: str, connected: frozenset[int]
) -> RunnerPage:
    """One runner, its specs, its job in flight and its latest jobs: five small queries."""
    row = runner_or_404(conn, ref)
    job = activity.runners_current_jobs(conn, [row.id]).get(row.id)
    specs = runners.runner_specs(conn, row.id)
    jobs = activity.recent_jobs(conn, viewer.user, RECENT_JOBS, runner_id=row.id)
    return RunnerPage(runner_line(row, connected, job, [s.name for s in specs]), specs, jobs)


async def _table_context(request: Request, ctx: Ctx) -> dict[str, Any]:
    """What the runners table shows (the fragment polled every ``REFRESH_SECONDS``)."""
    connected = request.app.state.hub.connected_runner_ids()
    lines = await ctx.db.read(_lines, connected)
    return {"lines": lines, "refresh": REFRESH_SECONDS}


async def _page_context(request: Request, ctx: Ctx) -> dict[str, Any]:
    """The table's context and the specs the create form offers."""
    specs = await ctx.db.read(lambda conn: runners.spec_list(conn, archived=False))
    return {**await _table_context(request, ctx), "specs": specs}


@router.get("/console/runners", response_class=HTMLResponse)
async def runners_page(request: Request, viewer: CurrentViewer, ctx: Ctx) -> HTMLResponse:
    require_admin_viewer(viewer.user, "runners")
    return render(request, viewer, "runners.html", await _page_context(request, ctx))


@router.get("/console/runners/fragment", response_class=HTMLResponse)
async def runners_fragment(request: Request, viewer: CurrentViewer, ctx: Ctx) -> HTMLResponse:
    """The runners table alone, which the page swaps in every few seconds."""
    require_admin_viewer(viewer.user, "runners")
    return render(request, viewer, "runners_table.html", await _table_context(request, ctx))


@router.get("/console/runners/{runner}", response_class=HTMLResponse)
async def runner_page(
    runner: str, request: Request, viewer: CurrentViewer, ctx: Ctx
) -> HTMLResponse:
    require_admin_viewer(viewer.user, "runners")
    connected = request.app.state.hub.connected_runner_ids()
    found = await ctx.db.read(_runner_page, viewer, runner, connected)
    return render(request, viewer, "runner.html", {"page": found})


@router.post("/console/runners", response_class=HTMLResponse)
async def create_runner(
    request: Request,
    viewer: CurrentViewer,
    ctx: Ctx,
    _csrf: CsrfChecked,
    name: Annotated[str, Form(max_length=1024)] = "",
    specs: Annotated[list[str] | None, Form()] = None,
) -> HTMLResponse:
    require_admin_viewer(viewer.user, "runners")
    name = name.strip()
    error = None
    if not name:
        error = "A runner needs a name."
    elif len(name) > NAME_MAX:
        error = f"A runner's name is at most {NAME_MAX} characters."
    if error is None:
        try:
            created = await runner_admin.create(ctx, name, specs or [])
        except ApiError as exc:
            error = exc.message
    if error is not None:
        context = await _page_context(request, ctx)
        context.update(create_error=error, create_name=name)
        return render(request, viewer, "runners.html", context, status_code=400)
    return render(
        request,
        viewer,
        "runner_key.html",
        {"runner": created, "token": created.token, "created": True},
        status_code=201,
    )


@router.post("/console/runners/{runner}/rotate", response_class=HTMLResponse)
async def rotate_key(
    runner: str, request: Request, viewer: CurrentViewer, ctx: Ctx, _csrf: CsrfChecked
) -> HTMLResponse:
    require_admin_viewer(viewer.user, "runners")
    row, token = await runner_admin.rotate_token(ctx, request.app.state.hub, runner)
    view = {"name": row.name, "slug": row.slug, "uuid": str(row.uuid)}
    return render(
        request, viewer, "runner_key.html", {"runner": view, "token": token, "created": False}
    )


Back = Literal["list", "runner"]


def _change_route(action: str, changes: RunnerChanges) -> None:
    async def change(
        runner: str,
        request: Request,
        viewer: CurrentViewer,
        ctx: Ctx,
        services: Svc,
        _csrf: CsrfChecked,
        back: Annotated[Back, Form()] = "list",
    ) -> Response:
        """``back``: the page the form was on, which the browser returns to."""
        require_admin_viewer(viewer.user, "runners")
        row = await runner_admin.update(ctx, services, request.app.state.hub, runner, changes)
        target = f"/console/runners/{row.slug}" if back == "runner" else "/console/runners"
        return RedirectResponse(target, status_code=303)

    router.add_api_route(
        f"/console/runners/{{runner}}/{action}",
        change,
        methods=["POST"],
        name=f"runner_{action}",
    )


_change_route("pause", RunnerChanges(paused=True))
_change_route("unpause", RunnerChanges(paused=False))
_change_route("archive", RunnerChanges(archived=True))
