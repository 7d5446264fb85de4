"""Project-scoped report reads."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Query
from sqlalchemy.engine import Connection

from benchrunner.server.access import project_access
from benchrunner.server.http.errors import not_found
from benchrunner.server.routes.deps import Ctx, MaybeUser
from benchrunner.server.store import reports
from benchrunner.server.views.resources import full_report_view
from benchrunner.server.views.samples import report_samples, with_samples

router = APIRouter(tags=["reports"])


@router.get("/v0/projects/{project}/reports/{report}")
async def get_report(
    project: str,
    report: str,
    user: MaybeUser,
    ctx: Ctx,
    samples: Annotated[
        bool, Query(description="include each metric's raw samples (count, min, max, values)")
    ] = False,
) -> dict[str, Any]:
    def unit(conn: Connection) -> dict[str, Any]:
        row = project_access(conn, user, project, write=False)
        try:
            report_id = reports.report_by_uuid(conn, uuid.UUID(report))
        except ValueError:
            report_id = None
        if report_id is None:
            raise not_found("report", report)
        found = reports.report_row(conn, report_id)
        if found.project_id != row.id:
            raise not_found("report", report)
        view = full_report_view(conn, report_id, with_job=True)
        return with_samples(view, report_samples(conn, report_id)) if samples else view

    return await ctx.db.read(unit)
