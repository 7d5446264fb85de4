"""Project-scoped report reads, and a report's bisect range set later
(docs/how-to/bisect.md)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from sqlalchemy.engine import Connection

from benchrunner.api.reports import Report, ReportUpdate
from benchrunner.server.access import project_access
from benchrunner.server.http.answers import ANSWERED, answered
from benchrunner.server.routes.deps import Ctx, MaybeUser, Svc
from benchrunner.server.store import alerts, reports
from benchrunner.server.views.lookups import report_in_project
from benchrunner.server.views.report_json import full_report_view
from benchrunner.server.views.samples import report_samples, with_samples

router = APIRouter(tags=["reports"])


@router.get("/v0/projects/{project}/reports/{report}", **ANSWERED)
async def get_report(
    project: str,
    report: str,
    user: MaybeUser,
    ctx: Ctx,
    samples: Annotated[
        bool, Query(description="include each metric's raw samples (count, min, max, values)")
    ] = False,
) -> Report:
    def unit(conn: Connection) -> Report:
        row = project_access(conn, user, project, write=False)
        report_id = report_in_project(conn, row.id, report)
        view = full_report_view(conn, report_id, with_job=True)
        if samples:
            view = with_samples(view, report_samples(conn, report_id))
        return answered(Report, view)

    return await ctx.db.read(unit)


@router.patch("/v0/projects/{project}/reports/{report}", **ANSWERED)
async def update_report(
    project: str, report: str, body: ReportUpdate, user: MaybeUser, ctx: Ctx, services: Svc
) -> Report:
    """Give the report what a bisection of its alerts needs (docs/how-to/bisect.md): its
    alerts whose bisect threshold's bisection could not start are asked for again."""

    def unit(conn: Connection) -> tuple[Report, bool]:
        row = project_access(conn, user, project, write=True)
        report_id = report_in_project(conn, row.id, report)
        reports.report_set_bisect(conn, report_id, body.bisect_range, body.bisect_image)
        again = alerts.alerts_bisect_skipped_of(conn, report_id)
        alerts.alerts_bisect_pending(conn, again)
        return answered(Report, full_report_view(conn, report_id, with_job=True)), bool(again)

    updated, asked = await ctx.db.write(unit)
    if asked:
        services.bisections.changed()
    return updated
