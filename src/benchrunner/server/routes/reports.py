"""Project-scoped report reads."""

from __future__ import annotations

import uuid
from typing import Any

from fastapi import APIRouter
from sqlalchemy.engine import Connection

from benchrunner.server.access import project_access
from benchrunner.server.http.errors import not_found
from benchrunner.server.routes.deps import Ctx, MaybeUser
from benchrunner.server.store import reports
from benchrunner.server.views.resources import full_report_view

router = APIRouter(tags=["reports"])


@router.get("/v0/projects/{project}/reports/{report}")
async def get_report(project: str, report: str, user: MaybeUser, ctx: Ctx) -> dict[str, Any]:
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
        return full_report_view(conn, report_id, with_job=True)

    return await ctx.db.read(unit)
