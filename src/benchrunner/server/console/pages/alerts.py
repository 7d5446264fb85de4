"""A project's alerts: the list (filtered by status and by the report that raised them) and the
forms that dismiss, silence or reactivate one (CSRF-checked POSTs answered with a redirect to
the list, which says what changed)."""

from __future__ import annotations

import urllib.parse
import uuid
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from sqlalchemy.engine import Connection

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
from benchrunner.server.errors import not_found
from benchrunner.server.routes.deps import MAX_PAGE, Ctx
from benchrunner.server.routes.dimensions import report_in_project
from benchrunner.server.store import alerts
from benchrunner.server.store.accounts import ProjectRow
from benchrunner.server.store.alerts import STATUSES, AlertStatus

router = APIRouter()

PER_PAGE = 25
Shown = Literal["active", "dismissed", "silenced", "all"]
ACTIONS: dict[str, AlertStatus] = {
    "dismiss": "dismissed",
    "silence": "silenced",
    "activate": "active",
}
"""The forms' actions (the last segment of their URL) and the status each sets."""


@dataclass(frozen=True)
class AlertList:
    project: ProjectRow
    rows: list[Any]
    pages: Pager
    writable: bool


def _list(
    conn: Connection, viewer: Viewer, ref: str, shown: Shown, report: str | None, page: int
) -> AlertList:
    project = visible_project(conn, viewer, ref)
    where = alerts.AlertFilter(
        status=None if shown == "all" else shown,
        report_id=report_in_project(conn, project.id, report),
    )
    rows, total = alerts.alert_list(
        conn, project.id, where, ascending=False, limit=PER_PAGE, offset=(page - 1) * PER_PAGE
    )
    return AlertList(project, rows, Pager(page, PER_PAGE, total), may_change(conn, viewer, project))


@router.get("/console/projects/{project}/alerts", response_class=HTMLResponse)
async def alert_list(
    project: str,
    request: Request,
    viewer: CurrentViewer,
    ctx: Ctx,
    status: Shown = "active",
    report: Annotated[str | None, Query(max_length=64)] = None,
    page: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 1,
    changed: Annotated[uuid.UUID | None, Query()] = None,
    now: Annotated[AlertStatus | None, Query()] = None,
) -> HTMLResponse:
    """``changed`` and ``now`` are set by the redirect after a form: which alert got which
    status, said once on the page."""
    report = report or None
    found = await ctx.db.read(_list, viewer, project, status, report, page)
    return render(
        request,
        viewer,
        "alerts.html",
        {
            "project": found.project,
            "rows": found.rows,
            "pages": found.pages,
            "writable": found.writable,
            "shown": status,
            "shown_choices": ("active", "dismissed", "silenced", "all"),
            "report": report,
            "changed": None if changed is None or now is None else (str(changed), now),
            "actions": {status: action for action, status in ACTIONS.items()},
        },
    )


def _set_status(
    conn: Connection, viewer: Viewer, ref: str, alert_ref: str, status: AlertStatus, now: Any
) -> ProjectRow:
    project = writable_project(conn, viewer, ref)
    found = alerts.alert_get(conn, project.id, alert_ref)
    if found is None:
        raise not_found("alert", alert_ref)
    if found.status != status:
        alerts.alert_set_status(conn, found.id, status, now)
    return project


def _action(action: str, status: AlertStatus) -> None:
    async def change_alert(
        project: str,
        alert: str,
        viewer: CurrentViewer,
        ctx: Ctx,
        _csrf: CsrfChecked,
        shown: Annotated[Shown, Form()] = "active",
        report: Annotated[str, Form(max_length=64)] = "",
    ) -> RedirectResponse:
        found = await ctx.db.write(_set_status, viewer, project, alert, status, ctx.clock.now())
        params = {"status": shown, "changed": alert, "now": status}
        if report:
            params["report"] = report
        target = f"/console/projects/{found.slug}/alerts?{urllib.parse.urlencode(params)}"
        return RedirectResponse(target, status_code=303)

    router.add_api_route(
        f"/console/projects/{{project}}/alerts/{{alert}}/{action}",
        change_alert,
        methods=["POST"],
        name=f"alert_{action}",
    )


for _name, _status in ACTIONS.items():
    _action(_name, _status)

assert set(ACTIONS.values()) == set(STATUSES)
