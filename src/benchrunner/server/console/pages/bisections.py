"""A project's bisections (docs/how-to/bisect.md): the list, the form that starts one (reached
from an alert's Bisect button, good and bad prefilled), and one bisection's page: its state and
every step as it happens (its live part refreshed every 2 s while it runs), the first bad commit
or why there is none, and a Cancel button. Starting and canceling are the services the API's
routes call (``bisection/start.py``, ``bisection/actions.py``), so the console refuses what the
API refuses."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from sqlalchemy.engine import Connection

from benchrunner import adapters
from benchrunner.api.bisections import Bisection
from benchrunner.server.bisection import actions, rows, start
from benchrunner.server.bisection.views import bisection_view
from benchrunner.server.console.bisect_form import (
    DEFAULTS,
    FIELDS,
    BisectForm,
    field_of,
    prefilled,
)
from benchrunner.server.console.bisect_form import checked_body as checked_bisection
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
from benchrunner.server.store import alerts, runners
from benchrunner.server.store.accounts import ProjectRow

router = APIRouter()

PER_PAGE = 25
BASE = "/console/projects/{project}/bisections"
SHOWN_WITH_THE_FORM = frozenset({400, 404, 429})
"""Refusals worth another try with other values (a bad value, an unknown alert or spec, a full
queue); the form is shown again with them. Any other (403) gets the error page."""


def _base(project: ProjectRow) -> str:
    return f"/console/projects/{project.slug}/bisections"


# ---------------------------------------------------------------- list


@dataclass(frozen=True)
class BisectionList:
    project: ProjectRow
    rows: list[Bisection]
    pages: Pager
    writable: bool


def _list(conn: Connection, viewer: Viewer, ref: str, page: int) -> BisectionList:
    project = visible_project(conn, viewer, ref)
    pages = Pager(page, PER_PAGE, rows.bisection_count(conn, project.id))
    listed = rows.bisection_list(conn, project.id, PER_PAGE, pages.offset)
    return BisectionList(
        project, [bisection_view(conn, b) for b in listed], pages, may_change(conn, viewer, project)
    )


@router.get(BASE, response_class=HTMLResponse)
async def bisection_list(
    project: str,
    request: Request,
    viewer: CurrentViewer,
    ctx: Ctx,
    page: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 1,
) -> HTMLResponse:
    found = await ctx.db.read(_list, viewer, project, page)
    context = {
        "project": found.project,
        "rows": found.rows,
        "pages": found.pages,
        "writable": found.writable,
    }
    return render(request, viewer, "bisections.html", context)


# ---------------------------------------------------------------- start


@dataclass(frozen=True)
class FormChoices:
    project: ProjectRow
    specs: list[str]
    alert: Any | None
    """The alert the form starts from (its benchmark, measure and report), if any."""


def _choices(conn: Connection, viewer: Viewer, ref: str, alert_ref: str) -> FormChoices:
    project = writable_project(conn, viewer, ref)
    specs = [row.slug for row in runners.spec_list(conn, archived=False)]
    found = None
    if alert_ref:
        found = alerts.alert_get(conn, project.id, alert_ref)
        if found is None:
            raise not_found("alert", alert_ref)
    return FormChoices(project, specs, found)


def _form_page(
    request: Request,
    viewer: Viewer,
    ctx: ServerContext,
    choices: FormChoices,
    form: BisectForm,
    status_code: int = 200,
) -> HTMLResponse:
    context = {
        "project": choices.project,
        "alert": choices.alert,
        "form": form,
        "specs": choices.specs,
        "templates": ctx.templates.all(),
        "adapters": sorted(adapters.ADAPTERS),
    }
    return render(request, viewer, "bisection_new.html", context, status_code=status_code)


@router.get(BASE + "/new", response_class=HTMLResponse)
async def new_bisection(
    project: str,
    request: Request,
    viewer: CurrentViewer,
    ctx: Ctx,
    alert: Annotated[str, Query(max_length=64)] = "",
) -> HTMLResponse:
    """The form; from an alert (``alert``), prefilled with what it says."""

    def unit(conn: Connection) -> tuple[FormChoices, dict[str, str]]:
        choices = _choices(conn, viewer, project, alert)
        values = dict(DEFAULTS) if choices.alert is None else prefilled(conn, choices.alert)
        return choices, values

    choices, values = await ctx.db.read(unit)
    return _form_page(request, viewer, ctx, choices, BisectForm.entered(values))


@router.post(BASE + "/new", response_model=None)
async def start_bisection(
    project: str,
    request: Request,
    viewer: CurrentViewer,
    ctx: Ctx,
    services: Svc,
    _csrf: CsrfChecked,
) -> HTMLResponse | RedirectResponse:
    """Start it as ``POST /v0/projects/{project}/bisections`` does and go to its page; a
    refused one is the form again, the reason beside its field."""
    raw = {k: v for k, v in (await request.form()).multi_items() if isinstance(v, str)}
    form = BisectForm.entered({k: v for k, v in raw.items() if k in FIELDS})
    choices = await ctx.db.read(_choices, viewer, project, form.values["alert"])
    body = checked_bisection(form)
    if body is None:
        return _form_page(request, viewer, ctx, choices, form, 400)
    try:
        origin = origin_of(request, viewer.user)
        view = await start.start(ctx, services, project, body, viewer.user, origin)
    except ApiError as exc:
        if exc.status not in SHOWN_WITH_THE_FORM:
            raise
        form.errors[field_of(exc.message)] = exc.message
        return _form_page(request, viewer, ctx, choices, form, exc.status)
    return RedirectResponse(f"{_base(choices.project)}/{view.uuid}", status_code=303)


# ---------------------------------------------------------------- one bisection


@dataclass(frozen=True)
class BisectionPage:
    project: ProjectRow
    bisection: Bisection
    writable: bool
    alert: Any | None
    """The alert it explains (its benchmark and measure), if it was started from one."""

    @property
    def live(self) -> bool:
        return self.bisection.state == rows.RUNNING


def _one(conn: Connection, viewer: Viewer, ref: str, bisection_ref: str) -> BisectionPage:
    project = visible_project(conn, viewer, ref)
    found = rows.bisection_get(conn, project.id, bisection_ref)
    if found is None:
        raise not_found("bisection", bisection_ref)
    view = bisection_view(conn, found)
    alert = None if view.alert is None else alerts.alert_get(conn, project.id, view.alert)
    return BisectionPage(project, view, may_change(conn, viewer, project), alert)


async def _page(
    request: Request,
    viewer: Viewer,
    ctx: ServerContext,
    project: str,
    bisection: str,
    template: str = "bisection.html",
    error: str | None = None,
    status_code: int = 200,
) -> HTMLResponse:
    found = await ctx.db.read(_one, viewer, project, bisection)
    context = {"page": found, "project": found.project, "b": found.bisection, "error": error}
    return render(request, viewer, template, context, status_code=status_code)


@router.get(BASE + "/{bisection}", response_class=HTMLResponse)
async def bisection_page(
    project: str, bisection: str, request: Request, viewer: CurrentViewer, ctx: Ctx
) -> HTMLResponse:
    return await _page(request, viewer, ctx, project, bisection)


@router.get(BASE + "/{bisection}/fragment", response_class=HTMLResponse)
async def bisection_live_part(
    project: str, bisection: str, request: Request, viewer: CurrentViewer, ctx: Ctx
) -> HTMLResponse:
    """State, outcome and steps: what the page swaps in while the bisection runs."""
    return await _page(request, viewer, ctx, project, bisection, "_bisection_live.html")


@router.post(BASE + "/{bisection}/cancel", response_model=None)
async def cancel(
    project: str,
    bisection: str,
    request: Request,
    viewer: CurrentViewer,
    ctx: Ctx,
    services: Svc,
    _csrf: CsrfChecked,
) -> HTMLResponse | RedirectResponse:
    """Cancel it and its jobs under way; one that has ended meanwhile is its page with why not."""
    try:
        view = await actions.cancel(ctx, services, project, bisection, viewer.user)
    except ApiError as exc:
        if exc.status != 409:
            raise
        return await _page(
            request, viewer, ctx, project, bisection, error=exc.message, status_code=409
        )
    return RedirectResponse(f"/console/projects/{project}/bisections/{view.uuid}", status_code=303)
