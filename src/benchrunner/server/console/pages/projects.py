"""Projects the viewer may read, one project's overview, and the navigation's project-scoped
entries (Jobs, Reports, Perf, Alerts, Thresholds, Bisections, Calibrations), which ask for a
project first when there is more than one to choose from."""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy.engine import Connection

from benchrunner.server.console.nav import NAV, PROJECT_SECTIONS
from benchrunner.server.console.templating import render
from benchrunner.server.console.viewer import CurrentViewer, Viewer, visible_project
from benchrunner.server.http.deps import Ctx
from benchrunner.server.store import accounts
from benchrunner.server.store.accounts import OrganizationRow, ProjectRow

router = APIRouter()

SECTION_LABELS = {link.section: link.label for link in NAV if link.section in PROJECT_SECTIONS}


@dataclass(frozen=True)
class ProjectListing:
    project: ProjectRow
    organization: OrganizationRow


def _listings(conn: Connection, viewer: Viewer) -> list[ProjectListing]:
    organizations: dict[int, OrganizationRow] = {}
    listings = []
    for project in accounts.project_list_visible(conn, viewer.user):
        org_id = project.organization_id
        if org_id not in organizations:
            organizations[org_id] = accounts.organization_by_id(conn, org_id)
        listings.append(ProjectListing(project, organizations[org_id]))
    return listings


@router.get("/console/projects", response_class=HTMLResponse)
async def projects(request: Request, viewer: CurrentViewer, ctx: Ctx) -> HTMLResponse:
    listings = await ctx.db.read(_listings, viewer)
    return render(
        request, viewer, "projects.html", {"listings": listings, "sections": SECTION_LABELS}
    )


def _overview(conn: Connection, viewer: Viewer, ref: str) -> ProjectListing:
    project = visible_project(conn, viewer, ref)
    return ProjectListing(project, accounts.organization_by_id(conn, project.organization_id))


@router.get("/console/projects/{project}", response_class=HTMLResponse)
async def project_overview(
    project: str, request: Request, viewer: CurrentViewer, ctx: Ctx
) -> HTMLResponse:
    listing = await ctx.db.read(_overview, viewer, project)
    return render(request, viewer, "project.html", {"listing": listing, "sections": SECTION_LABELS})


def _chooser(section: str) -> None:
    async def choose_project(request: Request, viewer: CurrentViewer, ctx: Ctx) -> Response:
        listings = await ctx.db.read(_listings, viewer)
        if len(listings) == 1:  # nothing to choose: straight to it
            only = listings[0].project.slug
            return RedirectResponse(f"/console/projects/{only}/{section}", status_code=303)
        context = {"listings": listings, "section": section, "label": SECTION_LABELS[section]}
        return render(request, viewer, "choose_project.html", context)

    router.add_api_route(
        f"/console/{section}",
        choose_project,
        methods=["GET"],
        response_class=HTMLResponse,
        name=f"choose_project_{section}",
    )


for _section in PROJECT_SECTIONS:
    _chooser(_section)
