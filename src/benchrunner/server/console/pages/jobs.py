"""A project's jobs: filtered by status, spec, runner and branch (a GET form, its state in the
URL), paged in the database by the API's own query, the rows refreshed every few seconds."""

from __future__ import annotations

from functools import partial
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse

from benchrunner.core.states import JobStatus
from benchrunner.server.console.job_lines import JobFilters, job_list
from benchrunner.server.console.templating import render
from benchrunner.server.console.viewer import CurrentViewer
from benchrunner.server.http.deps import MAX_PAGE, Ctx

router = APIRouter()

STATUSES = tuple(status.wire for status in JobStatus)


StatusQuery = Annotated[list[str] | None, Query()]
Text = Annotated[str, Query(max_length=256)]
PageNumber = Annotated[int, Query(ge=1, le=MAX_PAGE)]


async def job_filters(
    status: StatusQuery = None,
    spec: Text = "",
    runner: Text = "",
    branch: Text = "",
    page: PageNumber = 1,
) -> JobFilters:
    """The list's filters from its query string (the page and its fragment alike)."""
    return JobFilters(
        statuses=tuple(s for s in STATUSES if s in (status or [])),
        spec=spec.strip(),
        runner=runner.strip(),
        branch=branch.strip(),
        page=page,
    )


Wanted = Annotated[JobFilters, Depends(job_filters)]


@router.get("/console/projects/{project}/jobs", response_class=HTMLResponse)
async def jobs_page(
    project: str,
    request: Request,
    viewer: CurrentViewer,
    ctx: Ctx,
    wanted: Wanted,
) -> HTMLResponse:
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
    wanted: Wanted,
) -> HTMLResponse:
    """The table's body alone: what the list page swaps in every few seconds."""
    listing = await ctx.db.read(partial(job_list, choices=False), viewer, project, wanted)
    return render(request, viewer, "jobs/rows.html", {"listing": listing})
