"""Organizations and their projects."""

from __future__ import annotations

from fastapi import APIRouter, Response
from sqlalchemy.engine import Connection

from benchrunner.api.organizations import NewOrganization, NewProject, Organization, Project
from benchrunner.core import slugs
from benchrunner.server.access import organization_access, project_access, require_plan_setter
from benchrunner.server.http.answers import ANSWERED
from benchrunner.server.routes.deps import Ctx, MaybeUser, Page, User, paginate
from benchrunner.server.store import accounts
from benchrunner.server.views.resources import organization_view, project_view

router = APIRouter(tags=["organizations"])


@router.post("/v0/organizations", status_code=201, **ANSWERED)
async def create_organization(body: NewOrganization, user: User, ctx: Ctx) -> Organization:
    require_plan_setter(user, body.plan)

    def unit(conn: Connection) -> Organization:
        org = accounts.organization_create(
            conn, body.name, body.plan, ctx.clock.now(), leader_id=user.id, slug=body.slug
        )
        return organization_view(org, claimed=True)

    return await ctx.db.write(unit)


@router.get("/v0/organizations", **ANSWERED)
async def list_organizations(
    user: User,
    ctx: Ctx,
    response: Response,
    pages: Page,
) -> list[Organization]:
    def unit(conn: Connection) -> list[Organization]:
        return [
            organization_view(o, claimed=accounts.organization_is_claimed(conn, o.id))
            for o in accounts.organization_list_for(conn, user)
        ]

    return paginate(response, await ctx.db.read(unit), pages)


@router.get("/v0/organizations/{organization}", **ANSWERED)
async def get_organization(organization: str, user: User, ctx: Ctx) -> Organization:
    def unit(conn: Connection) -> Organization:
        org = organization_access(conn, user, organization)
        return organization_view(org, claimed=accounts.organization_is_claimed(conn, org.id))

    return await ctx.db.read(unit)


@router.post(
    "/v0/organizations/{organization}/projects",
    status_code=201,
    **ANSWERED,
)
async def create_project(organization: str, body: NewProject, user: User, ctx: Ctx) -> Project:
    wanted = slugs.slugify(body.slug or body.name)
    # Slugs are global, and a private project's may not be told to outsiders: only a server
    # admin, who sees every project, gets the slug as asked (when it is free); anyone else's
    # gets a random suffix, so a free slug and one a hidden project holds answer alike.
    slug = wanted if user.admin else slugs.with_suffix(wanted)

    def unit(conn: Connection) -> Project:
        org = organization_access(conn, user, organization)
        project = accounts.project_create(
            conn, org.id, body.name, body.visibility, ctx.clock.now(), slug=slug
        )
        return project_view(project, org.uuid)

    return await ctx.db.write(unit)


@router.get("/v0/organizations/{organization}/projects", **ANSWERED)
async def list_projects(
    organization: str,
    user: User,
    ctx: Ctx,
    response: Response,
    pages: Page,
) -> list[Project]:
    def unit(conn: Connection) -> list[Project]:
        org = organization_access(conn, user, organization)
        return [project_view(p, org.uuid) for p in accounts.project_list(conn, org.id)]

    return paginate(response, await ctx.db.read(unit), pages)


@router.get("/v0/projects/{project}", **ANSWERED)
async def get_project(project: str, user: MaybeUser, ctx: Ctx) -> Project:
    def unit(conn: Connection) -> Project:
        row = project_access(conn, user, project, write=False)
        org = accounts.organization_by_id(conn, row.organization_id)
        return project_view(row, org.uuid)

    return await ctx.db.read(unit)
