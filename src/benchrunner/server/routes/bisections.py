"""``/v0/projects/{project}/bisections`` (docs/how-to/bisect.md): start a bisection, read it
(state, steps, outcome), list a project's, cancel one. Reading needs what reading the project
does; starting and canceling, a signed-in caller who may change it. What a start checks and
makes is ``bisection/start.py``'s, which the console's form calls too."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from sqlalchemy.engine import Connection

from benchrunner.api.bisections import Bisection, BisectionCreate
from benchrunner.server.access import project_access
from benchrunner.server.bisection import actions, rows, start
from benchrunner.server.bisection.views import bisection_view
from benchrunner.server.http.answers import ANSWERED
from benchrunner.server.routes.deps import Ctx, MaybeUser, Page, Svc, origin_of

router = APIRouter(tags=["bisections"])

BISECTIONS = "/v0/projects/{project}/bisections"


@router.post(BISECTIONS, status_code=201, **ANSWERED)
async def create_bisection(
    project: str, body: BisectionCreate, request: Request, user: MaybeUser, ctx: Ctx, services: Svc
) -> Bisection:
    """Start a bisection; its first duet (bad against good) is queued at once."""
    return await start.start(ctx, services, project, body, user, origin_of(request, user))


@router.get(BISECTIONS, **ANSWERED)
async def list_bisections(
    project: str, user: MaybeUser, ctx: Ctx, response: Response, pages: Page
) -> list[Bisection]:
    """The project's bisections, newest first."""

    def unit(conn: Connection) -> list[Bisection]:
        found = project_access(conn, user, project, write=False)
        listed = rows.bisection_list(conn, found.id, pages.per_page, pages.offset)
        return [bisection_view(conn, b) for b in listed]

    return await ctx.db.read(unit)


@router.get(BISECTIONS + "/{bisection}", **ANSWERED)
async def get_bisection(project: str, bisection: str, user: MaybeUser, ctx: Ctx) -> Bisection:
    """The bisection: its state, every step (commit, jobs, ratio against the baseline with its
    interval, verdict) and, once done, the first bad commit or why there is none."""

    def unit(conn: Connection) -> Bisection:
        found = project_access(conn, user, project, write=False)
        found_bisection = actions.bisection_in_project(conn, found.id, bisection)
        return bisection_view(conn, found_bisection)

    return await ctx.db.read(unit)


@router.post(BISECTIONS + "/{bisection}/cancel", **ANSWERED)
async def cancel_bisection(
    project: str, bisection: str, user: MaybeUser, ctx: Ctx, services: Svc
) -> Bisection:
    """Cancel a running bisection and its jobs under way; 409 when it is no longer running."""
    return await actions.cancel(ctx, services, project, bisection, user)


@router.delete(BISECTIONS + "/{bisection}", **ANSWERED)
async def delete_bisection(
    project: str, bisection: str, user: MaybeUser, ctx: Ctx, services: Svc
) -> Bisection:
    """Cancel a running bisection, as ``POST .../cancel`` does (it stays listed)."""
    return await actions.cancel(ctx, services, project, bisection, user)
