"""A project's thresholds: the list, the form that creates one (branch, testbed, measure, an
optional benchmark, and the model), and one threshold's page, whose form replaces its model
(the old one stays in its history, as the API keeps it). A wrong value is answered with the
form again, the server's message beside the field. Both forms also set whether the threshold
alerts on a noisy report (``alert_when_noisy``), through the API's own store call."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Annotated, Any

import sqlalchemy as sa
from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy.engine import Connection

from benchrunner.detection.models import Model
from benchrunner.server.console.csrf import CsrfChecked
from benchrunner.server.console.pager import Pager
from benchrunner.server.console.templating import render
from benchrunner.server.console.threshold_form import (
    MODEL_FIELDS,
    SERIES_FIELDS,
    TESTS,
    ThresholdForm,
    checked_model,
    form_values,
    model_values,
)
from benchrunner.server.console.viewer import (
    CurrentViewer,
    Viewer,
    may_change,
    visible_project,
    writable_project,
)
from benchrunner.server.http.deps import MAX_PAGE, Ctx
from benchrunner.server.store import alerts, dimensions, thresholds
from benchrunner.server.store.accounts import ProjectRow
from benchrunner.server.store.tables import benchmark, branch, measure, testbed
from benchrunner.server.views.lookups import threshold_in_project

router = APIRouter()

PER_PAGE = 25
CHOICES = 500
"""Branches, testbeds, measures and benchmarks offered in the form's lists (by name)."""
SERIES_TABLES: dict[str, sa.Table] = {
    "branch": branch,
    "testbed": testbed,
    "measure": measure,
    "benchmark": benchmark,
}


def _base(project: ProjectRow) -> str:
    return f"/console/projects/{project.slug}/thresholds"


# ---------------------------------------------------------------- list


@dataclass(frozen=True)
class ThresholdList:
    project: ProjectRow
    rows: list[tuple[Any, Any]]
    """Each threshold with its current model."""
    pages: Pager
    writable: bool


def _list(conn: Connection, viewer: Viewer, ref: str, page: int) -> ThresholdList:
    project = visible_project(conn, viewer, ref)
    found, total = thresholds.threshold_list(
        conn,
        project.id,
        thresholds.ThresholdFilter(),
        ascending=True,
        limit=PER_PAGE,
        offset=(page - 1) * PER_PAGE,
    )
    current = thresholds.current_models(conn, [t.id for t in found])
    return ThresholdList(
        project,
        [(t, current.get(t.id)) for t in found],
        Pager(page, PER_PAGE, total),
        may_change(conn, viewer, project),
    )


@router.get("/console/projects/{project}/thresholds", response_class=HTMLResponse)
async def threshold_list(
    project: str,
    request: Request,
    viewer: CurrentViewer,
    ctx: Ctx,
    page: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 1,
) -> HTMLResponse:
    found = await ctx.db.read(_list, viewer, project, page)
    return render(
        request,
        viewer,
        "thresholds.html",
        {
            "project": found.project,
            "rows": found.rows,
            "pages": found.pages,
            "writable": found.writable,
        },
    )


# ---------------------------------------------------------------- create


@dataclass
class NewThreshold:
    """The create form's page: its choices, and the outcome of a submission."""

    project: ProjectRow
    choices: dict[str, list[Any]] = field(default_factory=dict)
    created: str | None = None
    """The new threshold's UUID."""
    existing: str | None = None
    """The UUID of the threshold the series has already (a conflict)."""


def _choices(conn: Connection, project_id: int) -> dict[str, list[Any]]:
    return {
        name: dimensions.dimension_list(
            conn, table, project_id, name=None, ascending=True, limit=CHOICES, offset=0
        )[0]
        for name, table in SERIES_TABLES.items()
    }


def _new_form(conn: Connection, viewer: Viewer, ref: str) -> NewThreshold:
    project = writable_project(conn, viewer, ref)
    return NewThreshold(project, _choices(conn, project.id))


def _series_key(conn: Connection, project_id: int, form: ThresholdForm) -> Any | None:
    """The series the form names, or None with its fields' errors set."""
    ids: dict[str, int | None] = {}
    for name, table in SERIES_TABLES.items():
        ref = form.values[name]
        if not ref:
            if name != "benchmark":
                form.errors.setdefault(name, f"choose a {name}")
            ids[name] = None
            continue
        found = dimensions.dimension_get(conn, table, project_id, ref)
        if found is None:
            form.errors.setdefault(name, f"no {name} {ref!r} in this project")
        ids[name] = None if found is None else int(found.id)
    if form.errors:
        return None
    return thresholds.SeriesKey(
        branch_id=ids["branch"] or 0,
        testbed_id=ids["testbed"] or 0,
        measure_id=ids["measure"] or 0,
        benchmark_id=ids["benchmark"],
    )


def _create(
    conn: Connection,
    viewer: Viewer,
    ref: str,
    form: ThresholdForm,
    model: Model | None,
    now: dt.datetime,
) -> NewThreshold:
    project = writable_project(conn, viewer, ref)
    outcome = NewThreshold(project)
    key = _series_key(conn, project.id, form)
    if key is not None and model is not None:
        existing = thresholds.threshold_find(conn, key)
        if existing is None:
            threshold_id, _ = thresholds.threshold_put(
                conn, project.id, key, model, now, alert_when_noisy=form.alert_when_noisy
            )
            outcome.created = str(thresholds.threshold_by_id(conn, threshold_id).uuid)
            return outcome
        outcome.existing = str(thresholds.threshold_by_id(conn, existing).uuid)
        form.errors["measure"] = (
            "this branch, testbed and measure"
            + (" and benchmark" if key.benchmark_id is not None else "")
            + " have a threshold already: edit its model instead"
        )
    outcome.choices = _choices(conn, project.id)
    return outcome


def _render_new(
    request: Request, viewer: Viewer, page: NewThreshold, form: ThresholdForm, status: int
) -> HTMLResponse:
    return render(
        request,
        viewer,
        "threshold_new.html",
        {
            "project": page.project,
            "choices": page.choices,
            "form": form,
            "tests": TESTS,
            "existing": page.existing,
        },
        status_code=status,
    )


@router.get("/console/projects/{project}/thresholds/new", response_class=HTMLResponse)
async def threshold_new(
    project: str, request: Request, viewer: CurrentViewer, ctx: Ctx
) -> HTMLResponse:
    page = await ctx.db.read(_new_form, viewer, project)
    form = ThresholdForm({**dict.fromkeys(SERIES_FIELDS, ""), **model_values(None)})
    return _render_new(request, viewer, page, form, 200)


@router.post("/console/projects/{project}/thresholds/new", response_class=HTMLResponse)
async def threshold_create(
    project: str, request: Request, viewer: CurrentViewer, ctx: Ctx, _csrf: CsrfChecked
) -> Response:
    form = form_values(await request.form(), (*SERIES_FIELDS, *MODEL_FIELDS))
    model = checked_model(form)
    page = await ctx.db.write(_create, viewer, project, form, model, ctx.clock.now())
    if page.created is None:
        return _render_new(request, viewer, page, form, 400)
    target = f"{_base(page.project)}/{page.created}?saved=created"
    return RedirectResponse(target, status_code=303)


# ---------------------------------------------------------------- one threshold, edit


@dataclass(frozen=True)
class ThresholdPage:
    project: ProjectRow
    threshold: Any
    current: Any | None
    models: list[Any]
    writable: bool
    precision: alerts.Precision
    """How its alerts were triaged (docs/how-to/thresholds-alerts.md)."""


def _page(conn: Connection, project: ProjectRow, found: Any, viewer: Viewer) -> ThresholdPage:
    return ThresholdPage(
        project,
        found,
        thresholds.current_model(conn, found.id),
        thresholds.models_of(conn, found.id),
        may_change(conn, viewer, project),
        alerts.precision_total(alerts.alert_precision(conn, project.id, found.id)),
    )


def _read_one(conn: Connection, viewer: Viewer, ref: str, threshold_ref: str) -> ThresholdPage:
    project = visible_project(conn, viewer, ref)
    return _page(conn, project, threshold_in_project(conn, project.id, threshold_ref), viewer)


def _update(
    conn: Connection,
    viewer: Viewer,
    ref: str,
    threshold_ref: str,
    model: Model | None,
    alert_when_noisy: bool,
    now: dt.datetime,
) -> ThresholdPage | str:
    """The path of the threshold's page once ``model`` replaces its model and
    ``alert_when_noisy`` is set; without a model (the form was wrong), the page to show again,
    nothing changed."""
    project = writable_project(conn, viewer, ref)
    found = threshold_in_project(conn, project.id, threshold_ref)
    if model is None:
        return _page(conn, project, found, viewer)
    thresholds.threshold_configure(conn, found.id, model, alert_when_noisy, now)
    return f"{_base(project)}/{found.uuid}?saved=updated"


def _render_one(
    request: Request,
    viewer: Viewer,
    page: ThresholdPage,
    form: ThresholdForm,
    *,
    saved: str | None = None,
    status: int = 200,
) -> HTMLResponse:
    return render(
        request,
        viewer,
        "threshold.html",
        {
            "project": page.project,
            "t": page.threshold,
            "current": page.current,
            "models": page.models,
            "writable": page.writable,
            "precision": page.precision,
            "form": form,
            "tests": TESTS,
            "saved": saved,
        },
        status_code=status,
    )


@router.get("/console/projects/{project}/thresholds/{threshold}", response_class=HTMLResponse)
async def threshold_page(
    project: str,
    threshold: str,
    request: Request,
    viewer: CurrentViewer,
    ctx: Ctx,
    saved: Annotated[str | None, Query(pattern="^(created|updated)$")] = None,
) -> HTMLResponse:
    page = await ctx.db.read(_read_one, viewer, project, threshold)
    form = ThresholdForm(
        model_values(page.current), alert_when_noisy=bool(page.threshold.alert_when_noisy)
    )
    return _render_one(request, viewer, page, form, saved=saved)


@router.post("/console/projects/{project}/thresholds/{threshold}", response_class=HTMLResponse)
async def threshold_update(
    project: str,
    threshold: str,
    request: Request,
    viewer: CurrentViewer,
    ctx: Ctx,
    _csrf: CsrfChecked,
) -> Response:
    form = form_values(await request.form(), MODEL_FIELDS)
    model = checked_model(form)
    outcome = await ctx.db.write(
        _update, viewer, project, threshold, model, form.alert_when_noisy, ctx.clock.now()
    )
    if isinstance(outcome, str):
        return RedirectResponse(outcome, status_code=303)
    return _render_one(request, viewer, outcome, form, status=400)
