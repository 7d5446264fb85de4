"""A project's alerts: the list (filtered by status and by the report that raised them), one
alert's page (its metric, boundary and threshold, and a link to the perf plot around it), and
the forms that dismiss, silence or reactivate one or record its verdict (CSRF-checked POSTs
answered with a redirect to the page the form was on, which says what changed), and the
precision of the project's thresholds (docs/how-to/thresholds-alerts.md)."""

from __future__ import annotations

import datetime as dt
import urllib.parse
import uuid
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from sqlalchemy.engine import Connection

from benchrunner import adapters
from benchrunner.api.alerts import AlertBisection
from benchrunner.server.bisection.views import alert_bisection
from benchrunner.server.console.bisect_form import BisectForm, prefilled
from benchrunner.server.console.csrf import CsrfChecked
from benchrunner.server.console.pager import Pager
from benchrunner.server.console.perf_state import PerfState
from benchrunner.server.console.templating import render
from benchrunner.server.console.viewer import (
    CurrentViewer,
    Viewer,
    may_change,
    visible_project,
    writable_project,
)
from benchrunner.server.http.deps import MAX_PAGE, Ctx
from benchrunner.server.http.errors import conflict, not_found
from benchrunner.server.processing.webhooks import (
    HELD_BACK,
    set_alert_status,
    set_alert_verdict,
)
from benchrunner.server.store import alerts, runners
from benchrunner.server.store.accounts import ProjectRow
from benchrunner.server.store.alerts import STATUSES, VERDICTS, AlertStatus, Verdict
from benchrunner.server.views.lookups import report_in_project

router = APIRouter()

PER_PAGE = 25
PERF_AROUND = dt.timedelta(days=30)
"""An alert's page links to its perf plot from this long before its report to as long after."""
Shown = Literal["active", "dismissed", "silenced", "all"]
ACTIONS: dict[str, AlertStatus] = {
    "dismiss": "dismissed",
    "silence": "silenced",
    "activate": "active",
}
"""The forms' actions (the last segment of their URL) and the status each sets."""


VERDICT_LABELS: dict[str, str] = {
    "true_positive": "True positive",
    "false_positive": "False positive",
    "expected": "Expected",
}
"""The verdict buttons' labels, by the verdict each records."""


@dataclass(frozen=True)
class AlertList:
    project: ProjectRow
    rows: list[Any]
    pages: Pager
    writable: bool
    precision: list[alerts.ThresholdPrecision]

    @property
    def overall(self) -> alerts.Precision:
        return alerts.precision_total(self.precision)


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
    return AlertList(
        project,
        rows,
        Pager(page, PER_PAGE, total),
        may_change(conn, viewer, project),
        alerts.alert_precision(conn, project.id),
    )


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
            "precision": found.precision,
            "overall": found.overall,
        },
    )


@dataclass(frozen=True)
class AlertPage:
    project: ProjectRow
    alert: Any
    writable: bool
    bisection: AlertBisection | None = None
    """The latest bisection started from the alert, in short (the API's ``bisection``)."""
    bisect_form: BisectForm | None = None
    """The Bisect form, prefilled from the alert (for a viewer who may start one)."""
    specs: list[str] | None = None

    @property
    def perf_url(self) -> str:
        """The perf page of the alert's series, around its report (the plot marks it)."""
        row = self.alert
        state = PerfState(
            refs={
                "branches": (row.branch_slug,),
                "testbeds": (row.testbed_slug,),
                "benchmarks": (row.benchmark_slug,),
                "measures": (row.measure_slug,),
            },
            start=row.metric_report_start - PERF_AROUND,
            end=row.metric_report_start + PERF_AROUND,
            scale="linear",
        )
        return f"/console/projects/{self.project.slug}/perf?{state.query_string()}"


def _alert_or_404(conn: Connection, project: ProjectRow, alert_ref: str) -> Any:
    found = alerts.alert_get(conn, project.id, alert_ref)
    if found is None:
        raise not_found("alert", alert_ref)
    return found


def _one(conn: Connection, viewer: Viewer, ref: str, alert_ref: str) -> AlertPage:
    """The alert if the viewer may read its project (else a 404), with its bisection; for a
    viewer who may change the project, the Bisect form prefilled from it."""
    project = visible_project(conn, viewer, ref)
    found = _alert_or_404(conn, project, alert_ref)
    writable = may_change(conn, viewer, project)
    bisection = alert_bisection(conn, found.id)
    if not writable:
        return AlertPage(project, found, writable, bisection)
    form = BisectForm.entered(prefilled(conn, found))
    specs = [row.slug for row in runners.spec_list(conn, archived=False)]
    return AlertPage(project, found, writable, bisection, form, specs)


@router.get("/console/projects/{project}/alerts/{alert}", response_class=HTMLResponse)
async def alert_page(
    project: str,
    alert: str,
    request: Request,
    viewer: CurrentViewer,
    ctx: Ctx,
    now: Annotated[AlertStatus | None, Query()] = None,
    verdict: Annotated[Verdict | Literal["none"] | None, Query()] = None,
) -> HTMLResponse:
    """``now`` and ``verdict`` are set by the redirect after a form on this page: the status
    or the verdict it got (``none``: taken back)."""
    found = await ctx.db.read(_one, viewer, project, alert)
    return render(
        request,
        viewer,
        "alert.html",
        {
            "page": found,
            "project": found.project,
            "changed": now,
            "triaged": verdict,
            "actions": {status: action for action, status in ACTIONS.items()},
            "verdicts": VERDICT_LABELS,
            "templates": ctx.templates.all(),
            "adapters": sorted(adapters.ADAPTERS),
        },
    )


def _set_verdict(
    conn: Connection,
    viewer: Viewer,
    ref: str,
    alert_ref: str,
    verdict: Verdict | None,
    now: dt.datetime,
) -> tuple[ProjectRow, uuid.UUID]:
    project = writable_project(conn, viewer, ref)
    found = _alert_or_404(conn, project, alert_ref)
    assert viewer.user is not None  # writable_project refuses anonymous viewers
    if found.status == "pending":
        raise conflict(HELD_BACK)
    set_alert_verdict(conn, found.id, verdict, viewer.user.id, now)
    return project, found.uuid


@router.post("/console/projects/{project}/alerts/{alert}/verdict")
async def triage_alert(
    project: str,
    alert: str,
    viewer: CurrentViewer,
    ctx: Ctx,
    _csrf: CsrfChecked,
    verdict: Annotated[Verdict | Literal["none"], Form()],
) -> RedirectResponse:
    """Record the alert's verdict (``none`` takes it back) and go back to its page."""
    found, alert_uuid = await ctx.db.write(
        _set_verdict,
        viewer,
        project,
        alert,
        None if verdict == "none" else verdict,
        ctx.clock.now(),
    )
    query = urllib.parse.urlencode({"verdict": verdict})
    return RedirectResponse(
        f"/console/projects/{found.slug}/alerts/{alert_uuid}?{query}", status_code=303
    )


def _set_status(
    conn: Connection, viewer: Viewer, ref: str, alert_ref: str, status: AlertStatus, now: Any
) -> tuple[ProjectRow, uuid.UUID]:
    project = writable_project(conn, viewer, ref)
    found = _alert_or_404(conn, project, alert_ref)
    if found.status == "pending":
        raise conflict(HELD_BACK)
    if found.status != status:
        set_alert_status(conn, found.id, status, now)
    return project, found.uuid


def _action(action: str, status: AlertStatus) -> None:
    async def change_alert(
        project: str,
        alert: str,
        viewer: CurrentViewer,
        ctx: Ctx,
        _csrf: CsrfChecked,
        shown: Annotated[Shown, Form()] = "active",
        report: Annotated[str, Form(max_length=64)] = "",
        back: Annotated[Literal["list", "alert"], Form()] = "list",
    ) -> RedirectResponse:
        """``back``: the page the form was on (the list, with its filters, or the alert's)."""
        found, alert_uuid = await ctx.db.write(
            _set_status, viewer, project, alert, status, ctx.clock.now()
        )
        alerts_url = f"/console/projects/{found.slug}/alerts"
        if back == "alert":
            target = f"{alerts_url}/{alert_uuid}?{urllib.parse.urlencode({'now': status})}"
            return RedirectResponse(target, status_code=303)
        params = {"status": shown, "changed": str(alert_uuid), "now": status}
        if report:
            params["report"] = report
        return RedirectResponse(f"{alerts_url}?{urllib.parse.urlencode(params)}", status_code=303)

    router.add_api_route(
        f"/console/projects/{{project}}/alerts/{{alert}}/{action}",
        change_alert,
        methods=["POST"],
        name=f"alert_{action}",
    )


for _name, _status in ACTIONS.items():
    _action(_name, _status)

assert set(ACTIONS.values()) == set(STATUSES)
assert set(VERDICT_LABELS) == set(VERDICTS)
