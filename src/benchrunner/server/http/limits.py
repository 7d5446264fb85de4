"""Bounded request bodies: 413 before a handler runs when a body, declared (Content-Length)
or chunked, exceeds ``request_body_max_bytes``.

Paths under a prefix in ``exempt`` are left to their handlers, which bound bodies themselves: the
registry's ``/v2/`` takes image layers (1 GiB by default), streamed to disk, never into memory,
and answers in the Distribution Spec's error format.
"""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from benchrunner.server.http.errors import error_body


class BodyLimit:
    def __init__(self, app: ASGIApp, max_bytes: int, exempt: tuple[str, ...] = ()) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.exempt = exempt

    def _exempt(self, path: str) -> bool:
        return any(path == prefix.rstrip("/") or path.startswith(prefix) for prefix in self.exempt)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self._exempt(scope.get("path", "")):
            await self.app(scope, receive, send)
            return
        max_bytes = self.max_bytes
        declared = dict(scope.get("headers", [])).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > max_bytes:
            await self._reject(send, max_bytes)
            return
        # Without a declared length (a chunked body) only reading tells: read the body here,
        # within the limit, so an oversized one is refused as a declared one is, before any
        # handler runs. The handlers behind this read whole JSON bodies anyway.
        body = await _read_within(receive, max_bytes)
        if body is None:
            await self._reject(send, max_bytes)
            return
        await self.app(scope, replay_body(body, receive), send)

    async def _reject(self, send: Send, max_bytes: int) -> None:
        body = json.dumps(
            error_body(f"request body exceeds {max_bytes} bytes", "too_large")
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": body})


async def _read_within(receive: Receive, max_bytes: int) -> bytes | None:
    """The whole request body, or None as soon as it exceeds ``max_bytes``."""
    parts: list[bytes] = []
    seen = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(parts)  # disconnected: the handler will see it too
        chunk = message.get("body", b"")
        seen += len(chunk)
        if seen > max_bytes:
            return None
        parts.append(chunk)
        if not message.get("more_body", False):
            return b"".join(parts)


def replay_body(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that hands the app the body already read, then the real channel (for
    the disconnect the app may wait on)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
