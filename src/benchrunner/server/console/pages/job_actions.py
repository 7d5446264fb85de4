"""Cancel and rerun from a job's page: CSRF-checked forms answered by a redirect to the page to
look at next (post-redirect-get), through the services the API calls too
(``channel.cancels.cancel``, ``submission.reruns.submit_rerun``). An action the job's state
refuses (409), or a full queue (429), shows the job's page again with the reason at its top."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import TypeVar

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from benchrunner.server.channel.cancels import cancel
from benchrunner.server.console.csrf import CsrfChecked
from benchrunner.server.console.pages.job_detail import JOB_PATH, detail_response
from benchrunner.server.console.viewer import CurrentViewer, Viewer
from benchrunner.server.context import ServerContext
from benchrunner.server.http.deps import Ctx, Life, Svc, origin_of
from benchrunner.server.http.errors import ApiError
from benchrunner.server.submission.reruns import submit_rerun

router = APIRouter()

Done = TypeVar("Done")

SHOWN_ON_THE_PAGE = frozenset({400, 409, 429})
"""Refusals that leave the job's page meaningful; any other error gets the error page."""


def _job_url(project: str, job: uuid.UUID | str) -> str:
    return f"/console/projects/{project}/jobs/{job}"


async def _act(
    request: Request,
    viewer: Viewer,
    ctx: ServerContext,
    project: str,
    job: uuid.UUID,
    action: Awaitable[Done],
    next_url: Callable[[Done], str],
) -> HTMLResponse | RedirectResponse:
    """Await ``action`` and redirect to ``next_url`` of its result; a refusal the job's page
    can show is that page with the reason, any other error is raised."""
    try:
        done = await action
    except ApiError as exc:
        if exc.status not in SHOWN_ON_THE_PAGE:
            raise
        return await detail_response(
            request, viewer, ctx, project, job, error=exc.message, status_code=exc.status
        )
    return RedirectResponse(next_url(done), status_code=303)


@router.post(JOB_PATH + "/cancel", response_model=None)
async def cancel_job(
    project: str,
    job: uuid.UUID,
    request: Request,
    viewer: CurrentViewer,
    ctx: Ctx,
    life: Life,
    _csrf: CsrfChecked,
) -> HTMLResponse | RedirectResponse:
    return await _act(
        request,
        viewer,
        ctx,
        project,
        job,
        cancel(ctx, life, project, str(job), viewer.user),
        lambda _: _job_url(project, job),
    )


@router.post(JOB_PATH + "/rerun", response_model=None)
async def rerun_job(
    project: str,
    job: uuid.UUID,
    request: Request,
    viewer: CurrentViewer,
    ctx: Ctx,
    services: Svc,
    _csrf: CsrfChecked,
) -> HTMLResponse | RedirectResponse:
    origin = origin_of(request, viewer.user)
    return await _act(
        request,
        viewer,
        ctx,
        project,
        job,
        submit_rerun(ctx, services, project, str(job), viewer.user, origin),
        lambda rerun: _job_url(project, rerun.job_uuid),
    )
