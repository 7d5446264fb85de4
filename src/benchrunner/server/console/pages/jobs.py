"""A project's jobs: filtered by status, spec, runner and branch (a GET form, its state in the
URL), paged in the database by the API's own query, the rows refreshed every few seconds."""

from __future__ import annotations

from functools import partial
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from benchrunner.core.states import JobStatus
from benchrunner.server.console.job_lines import JobFilters, job_list
from benchrunner.server.console.templating import render
from benchrunner.server.console.viewer import CurrentViewer
from benchrunner.server.routes.deps import MAX_PAGE, Ctx

router = APIRouter()

STATUSES = tuple(status.wire for status in JobStatus)


def _filters(
    status: list[str] | None, spec: str, runner: str, branch: str, page: int
) -> JobFilters:
    return JobFilters(
        statuses=tuple(s for s in STATUSES if s in (status or [])),
        spec=spec.strip(),
        runner=runner.strip(),
        branch=branch.strip(),
        page=page,
    )


StatusQuery = Annotated[list[str] | None, Query()]
Text = Annotated[str, Query(max_length=256)]
PageNumber = Annotated[int, Query(ge=1, le=MAX_PAGE)]


@router.get("/console/projects/{project}/jobs", response_class=HTMLResponse)
async def jobs_page(
    project: str,
    request: Request,
    viewer: CurrentViewer,
    ctx: Ctx,
    status: StatusQuery = None,
    spec: Text = "",
    runner: Text = "",
    branch: Text = "",
    page: PageNumber = 1,
) -> HTMLResponse:
    wanted = _filters(status, spec, runner, branch, page)
    listing = await ctx.db.read(job_list, viewer, project, wanted)
    return render(
        request,
        viewer,
        "jobs/list.html",
        {"listing": listing, "statuses": STATUSES},
        status_code=400 if listing.error else 200,
    )


@router.get("/console/projects/{project}/jobs/fragment", response_class=HTMLResponse)
async def jobs_rows(
    project: str,
    request: Request,
    viewer: CurrentViewer,
    ctx: Ctx,
    status: StatusQuery = None,
    spec: Text = "",
    runner: Text = "",
    branch: Text = "",
    page: PageNumber = 1,
) -> HTMLResponse:
    """The table's body alone: what the list page swaps in every few seconds."""
    wanted = _filters(status, spec, runner, branch, page)
    listing = await ctx.db.read(partial(job_list, choices=False), viewer, project, wanted)
    return render(request, viewer, "jobs/rows.html", {"listing": listing})
