"""What a signed-in member asks of a project's bisections, for the API's routes and the
console's pages alike: who may start or cancel one, a bisection by reference, and a cancel
(the bisection and its jobs under way)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Connection

from benchrunner.api.bisections import Bisection
from benchrunner.core.states import JobStatus
from benchrunner.server.access import members_project, project_access
from benchrunner.server.bisection import rows
from benchrunner.server.bisection.views import bisection_view
from benchrunner.server.context import ServerContext
from benchrunner.server.http.errors import conflict, not_found
from benchrunner.server.processing.webhooks import emit_alert_event
from benchrunner.server.services import Services
from benchrunner.server.store import jobs
from benchrunner.server.store.accounts import UserRow

SIGN_IN_TO = "start or cancel a bisection"
"""What an anonymous caller is asked to sign in to do."""


def bisection_in_project(conn: Connection, project_id: int, ref: str) -> Any:
    found = rows.bisection_get(conn, project_id, ref)
    if found is None:
        raise not_found("bisection", ref)
    return found


async def cancel(
    ctx: ServerContext, services: Services, project: str, bisection: str, user: UserRow | None
) -> Bisection:
    """Cancel a running bisection and its jobs under way (409 when it is no longer running):
    its view after."""

    def unit(conn: Connection) -> tuple[list[jobs.JobRow], str]:
        found = members_project(conn, user, project, SIGN_IN_TO)
        b = bisection_in_project(conn, found.id, bisection)
        now = ctx.clock.now()
        actor = user.email if user is not None else "anonymous"
        if not rows.bisection_update(
            conn,
            b.id,
            state=rows.CANCELED,
            reason=f"canceled by {actor}",
            finished=now,
            modified=now,
        ):
            raise conflict(f"bisection {bisection} is {b.state}, not running")
        if b.alert_id is not None:
            emit_alert_event(conn, "alert.bisected", [int(b.alert_id)], now)
        in_flight = [
            j.id
            for j in rows.jobs_of(conn, b.id)
            if JobStatus(j.status) in (JobStatus.PENDING, JobStatus.CLAIMED, JobStatus.RUNNING)
        ]
        return [row for row in (jobs.job_get(conn, i) for i in in_flight) if row], actor

    in_flight, actor = await ctx.db.write(unit)
    for job in in_flight:
        await services.lifecycle.cancel(job, actor)

    def read(conn: Connection) -> Bisection:
        found = project_access(conn, user, project, write=False)
        return bisection_view(conn, bisection_in_project(conn, found.id, bisection))

    return await ctx.db.read(read)
