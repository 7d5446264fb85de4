"""A project's calibrations (docs/how-to/thresholds-alerts.md): the list, the form that starts
one, and one calibration's page: its state and runs (its live part refreshed every 2 s while it
runs) and, once done, per benchmark and measure the runs' CV, the proposed threshold boundary
and the smallest change it can catch, or why there is none; an Apply button for a done one.
Starting and applying are the services the API's routes call
(``processing/calibration_start.py``, ``processing/calibrations.py``), so the console refuses
what the API refuses."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from sqlalchemy.engine import Connection

from benchrunner import adapters
from benchrunner.server.console.calibration_form import (
    DEFAULTS,
    FIELDS,
    CalibrationForm,
    checked_body,
    field_of,
)
from benchrunner.server.console.csrf import CsrfChecked
from benchrunner.server.console.pager import Pager
from benchrunner.server.console.templating import render
from benchrunner.server.console.viewer import (
    CurrentViewer,
    Viewer,
    may_change,
    visible_project,
    writable_project,
)
from benchrunner.server.context import ServerContext
from benchrunner.server.http.deps import MAX_PAGE, Ctx, Svc, origin_of
from benchrunner.server.http.errors import ApiError, not_found
from benchrunner.server.processing import calibration_start
from benchrunner.server.processing import calibrations as service
from benchrunner.server.processing.statistics_heap import statistics_ready
from benchrunner.server.store import calibrations, runners
from benchrunner.server.store.accounts import ProjectRow

router = APIRouter()

PER_PAGE = 25
BASE = "/console/projects/{project}/calibrations"
SHOWN_WITH_THE_FORM = frozenset({400, 404, 429})
"""Refusals worth another try with other values (a bad value, an unknown spec or template, a
full queue); the form is shown again with them. Any other (403) gets the error page."""


def _base(project: ProjectRow) -> str:
    return f"/console/projects/{project.slug}/calibrations"


# ---------------------------------------------------------------- list


@dataclass(frozen=True)
class CalibrationList:
    project: ProjectRow
    rows: list[dict[str, Any]]
    pages: Pager
    writable: bool


def _list(conn: Connection, viewer: Viewer, ref: str, page: int) -> CalibrationList:
    project = visible_project(conn, viewer, ref)
    found, total = calibrations.calibration_list(conn, project.id, PER_PAGE, (page - 1) * PER_PAGE)
    return CalibrationList(
        project,
        [service.public(service.calibration_view(conn, c)) for c in found],
        Pager(page, PER_PAGE, total),
        may_change(conn, viewer, project),
    )


@router.get(BASE, response_class=HTMLResponse)
async def calibration_list(
    project: str,
    request: Request,
    viewer: CurrentViewer,
    ctx: Ctx,
    page: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 1,
) -> HTMLResponse:
    await statistics_ready()
    found = await ctx.db.read(_list, viewer, project, page)
    context = {
        "project": found.project,
        "rows": found.rows,
        "pages": found.pages,
        "writable": found.writable,
    }
    return render(request, viewer, "calibrations.html", context)


# ---------------------------------------------------------------- start


def _form_choices(conn: Connection, viewer: Viewer, ref: str) -> tuple[ProjectRow, list[str]]:
    project = writable_project(conn, viewer, ref)
    return project, [row.slug for row in runners.spec_list(conn, archived=False)]


def _form_page(
    request: Request,
    viewer: Viewer,
    ctx: ServerContext,
    project: ProjectRow,
    specs: list[str],
    form: CalibrationForm,
    status_code: int = 200,
) -> HTMLResponse:
    context = {
        "project": project,
        "form": form,
        "specs": specs,
        "templates": ctx.templates.all(),
        "adapters": sorted(adapters.ADAPTERS),
    }
    return render(request, viewer, "calibration_new.html", context, status_code=status_code)


@router.get(BASE + "/new", response_class=HTMLResponse)
async def new_calibration(
    project: str, request: Request, viewer: CurrentViewer, ctx: Ctx
) -> HTMLResponse:
    found, specs = await ctx.db.read(_form_choices, viewer, project)
    form = CalibrationForm.entered(DEFAULTS)
    return _form_page(request, viewer, ctx, found, specs, form)


@router.post(BASE + "/new", response_model=None)
async def start_calibration(
    project: str,
    request: Request,
    viewer: CurrentViewer,
    ctx: Ctx,
    services: Svc,
    _csrf: CsrfChecked,
) -> HTMLResponse | RedirectResponse:
    """Start it as ``POST /v0/projects/{project}/calibrations`` does and go to its page; a
    refused one is the form again, the reason beside its field."""
    raw = {k: v for k, v in (await request.form()).multi_items() if isinstance(v, str)}
    form = CalibrationForm.entered({k: v for k, v in raw.items() if k in FIELDS})
    found, specs = await ctx.db.read(_form_choices, viewer, project)
    body = checked_body(form)
    if body is None:
        return _form_page(request, viewer, ctx, found, specs, form, 400)
    try:
        origin = origin_of(request, viewer.user)
        view = await calibration_start.start(ctx, services, project, body, viewer.user, origin)
    except ApiError as exc:
        if exc.status not in SHOWN_WITH_THE_FORM:
            raise
        form.errors[field_of(exc.message)] = exc.message
        return _form_page(request, viewer, ctx, found, specs, form, exc.status)
    return RedirectResponse(f"{_base(found)}/{view['uuid']}", status_code=303)


# ---------------------------------------------------------------- one calibration


@dataclass(frozen=True)
class CalibrationPage:
    project: ProjectRow
    calibration: dict[str, Any]
    writable: bool

    @property
    def live(self) -> bool:
        return bool(self.calibration["state"] == "running")


def _one(conn: Connection, viewer: Viewer, ref: str, calibration_ref: str) -> CalibrationPage:
    project = visible_project(conn, viewer, ref)
    found = calibrations.calibration_get(conn, project.id, calibration_ref)
    if found is None:
        raise not_found("calibration", calibration_ref)
    view = service.public(service.calibration_view(conn, found))
    return CalibrationPage(project, view, may_change(conn, viewer, project))


async def _page(
    request: Request,
    viewer: Viewer,
    ctx: ServerContext,
    project: str,
    calibration: str,
    *,
    template: str = "calibration.html",
    error: str | None = None,
    applied: int | None = None,
    status_code: int = 200,
) -> HTMLResponse:
    await statistics_ready()
    found = await ctx.db.read(_one, viewer, project, calibration)
    context = {
        "page": found,
        "project": found.project,
        "c": found.calibration,
        "error": error,
        "applied": applied,
    }
    return render(request, viewer, template, context, status_code=status_code)


@router.get(BASE + "/{calibration}", response_class=HTMLResponse)
async def calibration_page(
    project: str,
    calibration: str,
    request: Request,
    viewer: CurrentViewer,
    ctx: Ctx,
    applied: Annotated[int | None, Query(ge=0, le=10_000)] = None,
) -> HTMLResponse:
    """``applied`` is set by the redirect after Apply: how many thresholds it set."""
    return await _page(request, viewer, ctx, project, calibration, applied=applied)


@router.get(BASE + "/{calibration}/fragment", response_class=HTMLResponse)
async def calibration_live_part(
    project: str, calibration: str, request: Request, viewer: CurrentViewer, ctx: Ctx
) -> HTMLResponse:
    """State, runs and proposal: what the page swaps in while the calibration runs."""
    return await _page(
        request, viewer, ctx, project, calibration, template="_calibration_live.html"
    )


@router.post(BASE + "/{calibration}/apply", response_model=None)
async def apply(
    project: str,
    calibration: str,
    request: Request,
    viewer: CurrentViewer,
    ctx: Ctx,
    _csrf: CsrfChecked,
) -> HTMLResponse | RedirectResponse:
    """Make the proposal the target branch's per-benchmark thresholds; one not done is its
    page with why not."""
    try:
        view = await service.apply_in_project(ctx, project, calibration, viewer.user)
    except ApiError as exc:
        if exc.status != 409:
            raise
        return await _page(
            request, viewer, ctx, project, calibration, error=exc.message, status_code=409
        )
    return RedirectResponse(
        f"/console/projects/{project}/calibrations/{view['uuid']}"
        f"?applied={len(view['thresholds'])}",
        status_code=303,
    )
