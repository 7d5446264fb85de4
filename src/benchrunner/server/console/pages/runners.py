"""Runners: state, last heartbeat, specs and job in flight, refreshed while the page is open;
for admins, create (the key shown once), rotate the key, pause, unpause and archive, through
the same functions as the API (:mod:`benchrunner.server.runner_admin`)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy.engine import Connection

from benchrunner.server import runner_admin
from benchrunner.server.console.csrf import CsrfChecked
from benchrunner.server.console.permissions import require_admin
from benchrunner.server.console.templating import render
from benchrunner.server.console.viewer import CurrentViewer
from benchrunner.server.errors import ApiError
from benchrunner.server.routes.deps import Ctx, Life
from benchrunner.server.runner_admin import RunnerChanges
from benchrunner.server.store import activity, runners
from benchrunner.server.store.activity import JobSummary
from benchrunner.server.store.runners import RunnerRow

router = APIRouter()

REFRESH_SECONDS = 2
NAME_MAX = 64
"""The API's limit on a runner's name; checked here so that the form says so beside the field."""


@dataclass(frozen=True)
class RunnerLine:
    runner: RunnerRow
    state: str
    specs: list[str]
    job: JobSummary | None
    last_heartbeat: dt.datetime | None


def runner_state(row: RunnerRow, connected: bool, job: JobSummary | None) -> str:
    """archived, paused, busy (a job in flight), idle (connected, waiting) or offline."""
    if row.archived is not None:
        return "archived"
    if row.paused:
        return "paused"
    if job is not None:
        return "busy"
    return "idle" if connected else "offline"


def _lines(conn: Connection, connected: frozenset[int]) -> list[RunnerLine]:
    jobs = activity.runners_current_jobs(conn)
    rows = runners.runner_list(conn, archived=False, name=None)
    specs = runners.runners_spec_names(conn, [row.id for row in rows])
    lines = []
    for row in rows:
        job = jobs.get(row.id)
        beats = [t for t in (row.last_heartbeat, job.last_heartbeat if job else None) if t]
        lines.append(
            RunnerLine(
                row,
                runner_state(row, row.id in connected, job),
                specs.get(row.id, []),
                job,
                max(beats) if beats else None,
            )
        )
    return lines


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
    require_admin(viewer, "runners")
    return render(request, viewer, "runners.html", await _page_context(request, ctx))


@router.get("/console/runners/fragment", response_class=HTMLResponse)
async def runners_fragment(request: Request, viewer: CurrentViewer, ctx: Ctx) -> HTMLResponse:
    """The runners table alone, which the page swaps in every few seconds."""
    require_admin(viewer, "runners")
    return render(request, viewer, "runners_table.html", await _table_context(request, ctx))


@router.post("/console/runners", response_class=HTMLResponse)
async def create_runner(
    request: Request,
    viewer: CurrentViewer,
    ctx: Ctx,
    _csrf: CsrfChecked,
    name: Annotated[str, Form(max_length=1024)] = "",
    specs: Annotated[list[str] | None, Form()] = None,
) -> HTMLResponse:
    require_admin(viewer, "runners")
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
        {"runner": created, "token": created["token"], "created": True},
        status_code=201,
    )


@router.post("/console/runners/{runner}/rotate", response_class=HTMLResponse)
async def rotate_key(
    runner: str, request: Request, viewer: CurrentViewer, ctx: Ctx, _csrf: CsrfChecked
) -> HTMLResponse:
    require_admin(viewer, "runners")
    row, token = await runner_admin.rotate_token(ctx, request.app.state.hub, runner)
    view = {"name": row.name, "slug": row.slug, "uuid": str(row.uuid)}
    return render(
        request, viewer, "runner_key.html", {"runner": view, "token": token, "created": False}
    )


def _change_route(action: str, changes: RunnerChanges) -> None:
    async def change(
        runner: str,
        request: Request,
        viewer: CurrentViewer,
        ctx: Ctx,
        life: Life,
        _csrf: CsrfChecked,
    ) -> Response:
        require_admin(viewer, "runners")
        await runner_admin.update(ctx, life, request.app.state.hub, runner, changes)
        return RedirectResponse("/console/runners", status_code=303)

    router.add_api_route(
        f"/console/runners/{{runner}}/{action}",
        change,
        methods=["POST"],
        name=f"runner_{action}",
    )


_change_route("pause", RunnerChanges(paused=True))
_change_route("unpause", RunnerChanges(paused=False))
_change_route("archive", RunnerChanges(archived=True))
