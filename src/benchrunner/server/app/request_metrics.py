"""Request latency by route template (``/v0/projects/{project}/jobs/{job}``, never the raw
path, so that the number of series stays bounded whatever clients ask for)."""

from __future__ import annotations

import time
from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from benchrunner.server.metrics import ServerMetrics

METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
UNMATCHED = "unmatched"
"""The route label of a request no route matched (a 404 for any path at all)."""


class RequestMetrics:
    def __init__(
        self,
        app: ASGIApp,
        metrics: ServerMetrics,
        timer: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.app = app
        self.metrics = metrics
        self.timer = timer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = self.timer()
        status = 500  # what the client gets when the app raises before answering

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            # The router put the matched route into this same scope dict.
            route = getattr(scope.get("route"), "path", UNMATCHED)
            method = scope["method"] if scope["method"] in METHODS else "other"
            self.metrics.requests.labels(method=method, route=route, status=str(status)).observe(
                self.timer() - started
            )
