"""``POST /v0/run``: direct results, or a runner job from an image or a template
(docs/decisions/submission.md). The route is thin: the submission service
(``submission/service.py``) does the work, for the console and the calibrations too.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Header, Request, Response

from benchrunner.api.reports import RunAnswer
from benchrunner.api.run import RunBody
from benchrunner.server.http.answers import sent_as_built
from benchrunner.server.routes.deps import Ctx, MaybeUser, Svc, origin_of
from benchrunner.server.submission import idempotency
from benchrunner.server.submission.service import submit_run

router = APIRouter(tags=["run"])


_REPEAT: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "A repeat of a submission with the same Idempotency-Key and payload "
        "within the idempotency window: that submission's report and job, with "
        "`deduplicated: true`",
        "model": RunAnswer,
    }
}


@router.post("/v0/run", status_code=201, response_model=RunAnswer, responses=_REPEAT)
async def run(
    body: RunBody,
    request: Request,
    user: MaybeUser,
    ctx: Ctx,
    services: Svc,
    idempotency_key: Annotated[
        str | None,
        Header(
            alias=idempotency.HEADER,
            description="Makes a repeat within 5 minutes answer the first submission's report "
            "(or the body's idempotency_key, Bencher's spelling)",
        ),
    ] = None,
) -> Response:
    # Sent as built, as run_fast_path sends it: validating the report's every metric again
    # would cost CPU on every submission.
    view = await submit_run(ctx, services, body, user, origin_of(request, user), idempotency_key)
    return sent_as_built(view, 200 if view["deduplicated"] else 201)
