"""``POST /v0/projects/{project}/baselines``: "this change was intended".

From the given report onward, a branch/testbed's series (of one measure, or of every measure)
are judged against a new baseline: history before that report no longer counts, and the
active alerts on metrics of that report and later ones are dismissed.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from sqlalchemy.engine import Connection

from benchrunner.api.dimensions import BaselineReset, NewBaseline
from benchrunner.api.thresholds import Named
from benchrunner.server.access import project_access
from benchrunner.server.http.answers import ANSWERED
from benchrunner.server.http.errors import bad_request
from benchrunner.server.processing.webhooks import emit_alert_event
from benchrunner.server.routes.deps import Ctx, MaybeUser
from benchrunner.server.store import alerts, reports
from benchrunner.server.store.tables import branch, measure, testbed
from benchrunner.server.views.lookups import in_project, report_in_project
from benchrunner.server.views.resources import iso

router = APIRouter(tags=["baselines"])


@router.post("/v0/projects/{project}/baselines", status_code=201, **ANSWERED)
async def reset_baseline(
    project: str, body: BaselineReset, user: MaybeUser, ctx: Ctx
) -> NewBaseline:
    """The report must be on that branch and testbed. Answers the reset with how many alerts
    it dismissed."""

    def unit(conn: Connection) -> NewBaseline:
        row = project_access(conn, user, project, write=True)
        on_branch = in_project(conn, branch, row.id, body.branch, "branch")
        on_testbed = in_project(conn, testbed, row.id, body.testbed, "testbed")
        of_measure = (
            None
            if body.measure is None
            else in_project(conn, measure, row.id, body.measure, "measure")
        )
        report_id = report_in_project(conn, row.id, body.report)
        assert report_id is not None
        found = reports.report_row(conn, report_id)
        if found.branch_id != on_branch.id or found.testbed_id != on_testbed.id:
            raise bad_request(
                f"report {body.report} is not on branch {body.branch!r} and testbed "
                f"{body.testbed!r}"
            )
        now = ctx.clock.now()
        reset_uuid, dismissed = alerts.baseline_reset_add(
            conn,
            row.id,
            on_branch.id,
            on_testbed.id,
            None if of_measure is None else of_measure.id,
            report_id,
            found.start_time,
            now,
        )
        emit_alert_event(conn, "alert.dismissed", dismissed, now)
        return NewBaseline(
            uuid=str(reset_uuid),
            project=str(row.uuid),
            branch=_named(on_branch),
            testbed=_named(on_testbed),
            measure=None if of_measure is None else _named(of_measure),
            report=str(found.uuid),
            dismissed=len(dismissed),
            created=iso(now),
        )

    return await ctx.db.write(unit)


def _named(row: Any) -> Named:
    return Named(uuid=str(row.uuid), name=row.name, slug=row.slug)
