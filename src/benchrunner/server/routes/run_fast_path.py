"""``POST /v0/run`` answered without FastAPI's per-request machinery.

Routing through the included routers, dependency solving, the exception and exit-stack
middlewares and the response field are work done again for every submission, none of it
needed to answer this one route, and a submission is a large part of a job's server CPU. This
middleware answers the route itself: it validates the body with the route's own model, calls
the same ``submit_run`` the route calls, and sends the answer as the route does. A body
that does not validate (or is not JSON) goes on to the FastAPI route, so every malformed
request is answered exactly as FastAPI answers it; an error the submission raises goes to the
application's own exception handlers, as it would from the route.

So every submission our clients send takes this path, and the route is left what only FastAPI
does the same way: answering a body that is not a valid JSON ``RunBody`` (its error's very
bytes) and describing the endpoint in the OpenAPI document. The submission itself has one
implementation, ``submit_run``, whichever answers.
"""

from __future__ import annotations

import inspect
import json
from typing import Any

from fastapi.routing import APIRoute
from pydantic import TypeAdapter, ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from benchrunner.api.run import RunBody
from benchrunner.server.http.answers import sent_as_built
from benchrunner.server.http.limits import replay_body
from benchrunner.server.routes import run
from benchrunner.server.routes.deps import optional_user, origin_of
from benchrunner.server.submission import idempotency
from benchrunner.server.submission.service import submit_run

PATH = "/v0/run"
_BODY = TypeAdapter(RunBody)


ROUTE_PARAMETERS = ("body", "request", "user", "ctx", "services", "idempotency_key")
"""The parameters of the route's endpoint that ``RunFastPath._submit`` provides."""


def _route() -> APIRoute:
    """The FastAPI route this answers for (what the request metrics label it with), checked to
    take exactly what the fast path provides: a dependency, parameter or status added to the
    route alone would be skipped here, so the server refuses to start until both agree."""
    for route in run.router.routes:
        if isinstance(route, APIRoute) and route.path == PATH and "POST" in (route.methods or ()):
            parameters = tuple(inspect.signature(route.endpoint).parameters)
            if parameters != ROUTE_PARAMETERS or route.dependencies or route.status_code != 201:
                raise RuntimeError(
                    f"POST {PATH} changed (parameters {parameters}, dependencies "
                    f"{route.dependencies}, status {route.status_code}): update run_fast_path"
                )
            return route
    raise LookupError(f"no POST {PATH} route")


def _json_content_type(request: Request) -> bool:
    """Whether the body is declared JSON the way our clients declare it; FastAPI's rules for
    anything else (no type, ``+json`` types) are left to FastAPI."""
    declared = request.headers.get("content-type", "")
    return declared.partition(";")[0].strip().lower() == "application/json"


class RunFastPath:
    """ASGI middleware: answers ``POST /v0/run`` when its body is a valid JSON ``RunBody``,
    passes everything else on untouched (a malformed body with the body replayed)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.route = _route()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != PATH:
            await self.app(scope, receive, send)
            return
        request = Request(scope, receive)
        raw = await request.body()
        body = _valid_body(request, raw)
        if body is None:
            await self.app(scope, replay_body(raw, receive), send)
            return
        scope["route"] = self.route
        try:
            response = await self._submit(request, body)
        except Exception as exc:
            handler = _handler_for(scope["app"], exc)
            if handler is None:
                raise  # to the server-error middleware, as from the route
            if inspect.iscoroutinefunction(handler):
                response = await handler(request, exc)
            else:
                response = await run_in_threadpool(handler, request, exc)
        await response(scope, receive, send)

    async def _submit(self, request: Request, body: RunBody) -> Response:
        app = request.app
        ctx, services = app.state.ctx, app.state.services
        user = await optional_user(request, ctx)
        view = await submit_run(
            ctx,
            services,
            body,
            user,
            origin_of(request, user),
            request.headers.get(idempotency.HEADER),
        )
        return sent_as_built(view, 200 if view["deduplicated"] else 201)


def _valid_body(request: Request, raw: bytes) -> RunBody | None:
    """The body as the route's model, or None when FastAPI should answer it."""
    if not raw or not _json_content_type(request):
        return None
    try:
        return _BODY.validate_python(json.loads(raw))
    except (ValueError, ValidationError, RecursionError):
        return None  # json's decode errors are ValueErrors; deep nesting is a RecursionError


def _handler_for(app: Any, exc: Exception) -> Any:
    """The application's handler for ``exc``, as Starlette's exception middleware finds it (an
    ``HTTPException``'s status code first, then the closest class in its MRO); ``Exception``
    itself is the server-error middleware's."""
    handlers = app.exception_handlers
    if isinstance(exc, HTTPException) and exc.status_code in handlers:
        return handlers[exc.status_code]
    for cls in type(exc).__mro__:
        if cls is Exception:
            return None
        if cls in handlers:
            return handlers[cls]
    return None
