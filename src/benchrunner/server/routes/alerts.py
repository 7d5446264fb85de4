"""A project's alerts: list with filters, read one, ``PATCH`` its status (``active``,
``dismissed``, ``silenced``) or its verdict (``true_positive``, ``false_positive``,
``expected``), and the precision of its thresholds' alerts
(docs/how-to/thresholds-alerts.md)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Response
from sqlalchemy.engine import Connection

from benchrunner.api.alerts import Alert, AlertPrecision, AlertUpdate
from benchrunner.server.access import project_access
from benchrunner.server.bisection.views import alert_bisection
from benchrunner.server.http.answers import ANSWERED
from benchrunner.server.http.errors import conflict, not_found, unauthorized
from benchrunner.server.processing.webhooks import (
    HELD_BACK,
    set_alert_status,
    set_alert_verdict,
)
from benchrunner.server.routes.deps import Ctx, MaybeUser, Page
from benchrunner.server.store import alerts, confirmations
from benchrunner.server.store.alerts import ListedStatus, VerdictFilter
from benchrunner.server.store.tables import benchmark, branch, measure, testbed
from benchrunner.server.views.lookups import optional_id, report_in_project
from benchrunner.server.views.resources import alert_view, precision_view

router = APIRouter(tags=["alerts"])


def _alert_answer(conn: Connection, found: Any) -> Alert:
    """An alert with the confirmation runs that judged it, if any did."""
    runs = None
    if found.confirmation is not None:
        runs = confirmations.confirmation_runs(conn, found.report_id)
    return alert_view(found, runs)


@router.get("/v0/projects/{project}/alerts", **ANSWERED)
async def list_alerts(
    project: str,
    user: MaybeUser,
    ctx: Ctx,
    response: Response,
    pages: Page,
    status: ListedStatus | None = None,
    branch_ref: Annotated[str | None, Query(alias="branch")] = None,
    testbed_ref: Annotated[str | None, Query(alias="testbed")] = None,
    benchmark_ref: Annotated[str | None, Query(alias="benchmark")] = None,
    measure_ref: Annotated[str | None, Query(alias="measure")] = None,
    report: str | None = None,
    verdict: VerdictFilter | None = None,
    direction: Literal["asc", "desc"] = "desc",
) -> list[Alert]:
    """Newest first by default. ``status`` ``pending`` or ``suspected`` lists the alerts held
    back for confirmation runs (left out otherwise); ``report`` is the report whose evaluation
    raised the alerts;
    ``verdict`` a triage verdict or ``untriaged``; the other filters name a branch, testbed,
    benchmark or measure by UUID, slug or name."""

    def unit(conn: Connection) -> tuple[list[Alert], int]:
        row = project_access(conn, user, project, write=False)
        where = alerts.AlertFilter(
            status=status,
            branch_id=optional_id(conn, branch, row.id, branch_ref, "branch"),
            testbed_id=optional_id(conn, testbed, row.id, testbed_ref, "testbed"),
            benchmark_id=optional_id(conn, benchmark, row.id, benchmark_ref, "benchmark"),
            measure_id=optional_id(conn, measure, row.id, measure_ref, "measure"),
            report_id=report_in_project(conn, row.id, report),
            verdict=verdict,
        )
        found, total = alerts.alert_list(
            conn,
            row.id,
            where,
            ascending=direction == "asc",
            limit=pages.per_page,
            offset=pages.offset,
        )
        runs = confirmations.confirmation_runs_of(
            conn, [a.report_id for a in found if a.confirmation is not None]
        )
        return [alert_view(a, runs.get(a.report_id)) for a in found], total

    answers, total = await ctx.db.read(unit)
    response.headers["X-Total-Count"] = str(total)
    return answers


@router.get("/v0/projects/{project}/alerts/precision", **ANSWERED)
async def alert_precision(project: str, user: MaybeUser, ctx: Ctx) -> AlertPrecision:
    """Per threshold and overall: how many alerts were triaged as each verdict, how many are
    untriaged, and the precision, (true_positive + expected) / triaged, or null while no alert
    is triaged."""

    def unit(conn: Connection) -> AlertPrecision:
        row = project_access(conn, user, project, write=False)
        return precision_view(row.uuid, alerts.alert_precision(conn, row.id))

    return await ctx.db.read(unit)


def _alert(conn: Connection, project_id: int, ref: str) -> Any:
    found = alerts.alert_get(conn, project_id, ref)
    if found is None:
        raise not_found("alert", ref)
    return found


@router.get("/v0/projects/{project}/alerts/{alert}", **ANSWERED)
async def get_alert(project: str, alert: str, user: MaybeUser, ctx: Ctx) -> Alert:
    """The alert, with the latest bisection started from it (``bisection``: its uuid, state,
    outcome and ``text``; ``pending`` or ``skipped`` with why when its bisect threshold asked
    for one not started; null when none was)."""

    def unit(conn: Connection) -> Alert:
        row = project_access(conn, user, project, write=False)
        found = _alert(conn, row.id, alert)
        view = _alert_answer(conn, found)
        view.bisection = alert_bisection(conn, found.id, found)
        return view

    return await ctx.db.read(unit)


@router.patch("/v0/projects/{project}/alerts/{alert}", **ANSWERED)
async def update_alert(
    project: str, alert: str, body: AlertUpdate, user: MaybeUser, ctx: Ctx
) -> Alert:
    """Set the alert's status: ``dismissed`` (seen, not a regression), ``silenced``, or back
    to ``active``; and/or its verdict: ``true_positive`` (a real regression),
    ``false_positive`` (noise) or ``expected`` (a real, intended change), kept with who set it
    and when; ``"verdict": null`` takes it back."""

    def unit(conn: Connection) -> Alert:
        row = project_access(conn, user, project, write=True)
        found = _alert(conn, row.id, alert)
        changes = body.status is not None or "verdict" in body.model_fields_set
        if changes and found.status == "pending":
            raise conflict(HELD_BACK)
        if body.status is not None and body.status != found.status:
            set_alert_status(conn, found.id, body.status, ctx.clock.now())
        if "verdict" in body.model_fields_set:
            if user is None:
                raise unauthorized("sign in to triage an alert: a verdict names who gave it")
            set_alert_verdict(conn, found.id, body.verdict, user.id, ctx.clock.now())
        return _alert_answer(conn, _alert(conn, row.id, alert))

    return await ctx.db.write(unit)
