"""Bounded HTTP connections: a deadline for reading each request, and a cap on open connections.

uvicorn closes a keep-alive connection that stays idle after a response, but it waits forever
for a request that never arrives or arrives a byte at a time, and it accepts connections until
the process runs out of file descriptors. This protocol adds the two missing bounds:

- **Read deadline.** From the moment a connection opens, or a new request's first byte arrives,
  the client has ``read_timeout`` seconds to send the request line and headers. The body may
  take longer, but only while it keeps coming: every ``body_min_rate`` bytes received add one
  second, so an upload at a normal rate is never cut, while a trickle is. A connection past its
  deadline is answered 408 (if nothing was answered yet: its headers, or its body while the
  application waits for it) and closed. While uvicorn itself has
  stopped reading (the application has not consumed what it was sent), the clock is not the
  client's fault: the deadline moves on by another ``read_timeout``.
- **Connection cap.** When ``max_connections`` are open, a new connection closes the one that
  has waited longest for a request (headers not yet complete, or idle between requests); if
  every open connection is busy (a request being handled, or a WebSocket channel), the new
  connection is closed instead. Silent sockets therefore cannot starve the server of file
  descriptors, and they are the first to go.

- **Malformed requests.** What uvicorn's parser refuses is answered in the API's JSON error
  shape, not uvicorn's plain text: ``400``, or ``414`` for a request line whose URL is longer
  than ``MAX_URL_BYTES`` (the most uvicorn's URL parser takes).

A connection upgraded to a WebSocket (a runner's channel) leaves this protocol's care: neither
bound applies to it any more, except that it counts towards the cap.

A response goes out in one write where uvicorn makes two: its head (status line and headers) is
held until the body's first part, and written with it (``_HeadWithBody``), or alone at the end of
the event loop's turn if no body comes in that turn (a streamed response's head still leaves at
once). A socket's write is a large share of what answering a request costs
(benchmarks/RESULTS.md, ``profile_shares``), and a submission's answer is a head and a body.
"""

from __future__ import annotations

import asyncio
import json
import logging
import resource
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, ClassVar

from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle
from uvicorn.server import ServerState

from benchrunner.server.http.errors import error_body

log = logging.getLogger(__name__)

_UNLIMITED_FDS = 65536  # the limit assumed when ``ulimit -n`` is unlimited
_FULL_WARNING_INTERVAL = 60.0  # seconds between two warnings that the cap was reached
MAX_URL_BYTES = 65535
"""The longest request target (path and query) answered; longer is 414. httptools parses no
longer URL, so this is the most any request can carry."""


class _UrlTooLong(Exception):
    """Stops the parser at a request line longer than ``MAX_URL_BYTES``."""


@dataclass(frozen=True)
class ConnectionLimits:
    read_timeout: float
    """Seconds to send a request's headers; also the base allowance for its body."""
    body_min_rate: int
    """Bytes per second a body must keep up for its deadline to move on."""
    max_connections: int
    """Open connections (HTTP and WebSocket) beyond which the longest-waiting one is closed."""


def default_max_connections() -> int:
    """Half of this process's open-file limit (``ulimit -n``): the other half stays free for
    everything else the server opens (database connections, blobs, logs)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    limit = _UNLIMITED_FDS if soft == resource.RLIM_INFINITY else soft
    return max(1, limit // 2)


class _Book:
    """The connections of one server that wait for a request, oldest first, and those this
    protocol has closed but whose transport has not reported the loss yet."""

    def __init__(self) -> None:
        self.waiting: OrderedDict[BoundedHttpProtocol, None] = OrderedDict()
        self.closing: set[BoundedHttpProtocol] = set()
        self.last_full_warning: float | None = None


class BoundedHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a request-read deadline and a connection cap.

    Use :func:`protocol_class` to get a subclass bound to one server's limits.
    """

    limits: ClassVar[ConnectionLimits]
    book: ClassVar[_Book]

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self._read_started: float | None = None
        self._body_received = 0
        self._headers_complete = False
        self._url_too_long = False
        self._deadline: asyncio.TimerHandle | None = None

    # Connection events

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.book.waiting[self] = None
        self._start_reading()
        if len(self.connections) - len(self.book.closing) > self.limits.max_connections:
            self._make_room()

    def connection_lost(self, exc: Exception | None) -> None:
        self._forget()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._read_started is None and not self.transport.is_closing():
            self._start_reading()
        super().data_received(data)

    def handle_websocket_upgrade(self) -> None:
        self._forget()
        super().handle_websocket_upgrade()

    # Parser callbacks

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._headers_complete = False
        self._body_received = 0
        if self._read_started is None:
            self._start_reading()

    def on_url(self, url: bytes) -> None:
        if len(self.url) + len(url) > MAX_URL_BYTES:
            self._url_too_long = True
            raise _UrlTooLong  # the parser stops; uvicorn answers with send_400_response
        super().on_url(url)

    def on_headers_complete(self) -> None:
        self._headers_complete = True
        self.book.waiting.pop(self, None)
        before = self.cycle
        super().on_headers_complete()
        cycle = self.cycle
        if cycle is not None and cycle is not before:  # not an upgrade to a WebSocket
            # The cycle's task has not run yet: nothing was written through it.
            cycle.transport = _HeadWithBody(self.transport, self.loop, cycle)  # type: ignore[assignment]

    def on_body(self, body: bytes) -> None:
        self._body_received += len(body)
        super().on_body(body)

    def on_message_complete(self) -> None:
        self._stop_reading()
        super().on_message_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and not self.pipeline:
            self.book.waiting[self] = None  # idle until the next request

    # The deadline

    def _start_reading(self) -> None:
        self._read_started = self.loop.time()
        self._body_received = 0
        self._arm(self._read_started + self.limits.read_timeout)

    def _stop_reading(self) -> None:
        self._read_started = None
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _arm(self, when: float) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline = self.loop.call_at(when, self._check_deadline)

    def _check_deadline(self) -> None:
        self._deadline = None
        if self._read_started is None or self.transport.is_closing():
            return
        now = self.loop.time()
        if self.flow.read_paused:
            # uvicorn stopped reading because the application is behind: not the client's
            # fault, so its clock starts again.
            self._start_reading()
            return
        allowance = self.limits.read_timeout + self._body_received / self.limits.body_min_rate
        deadline = self._read_started + allowance
        if now < deadline:
            self._arm(deadline)
            return
        log.debug(
            "closing a connection from %s: request not received within %.0f s",
            self.client[0] if self.client else "?",
            self.limits.read_timeout,
        )
        self._close(answer=True)

    # The cap

    def _make_room(self) -> None:
        now = self.loop.time()
        last = self.book.last_full_warning
        if last is None or now - last >= _FULL_WARNING_INTERVAL:
            self.book.last_full_warning = now
            log.warning(
                "%d connections open (--max-connections): closing those that wait longest "
                "for a request",
                self.limits.max_connections,
            )
        victim = next((c for c in self.book.waiting if c is not self), self)
        victim._close(answer=False)

    def _close(self, *, answer: bool) -> None:
        """Close this connection, first answering 408 if nothing was answered to the request
        being read: its headers are incomplete and the one before (if any) was answered, or
        the application waits for its body and has not started a response."""
        self._stop_reading()
        self.book.waiting.pop(self, None)
        self.book.closing.add(self)
        cycle = self.cycle
        if not answer:
            pass
        elif not self._headers_complete:
            if cycle is None or cycle.response_complete:
                self.transport.write(_request_timeout(self.limits.read_timeout))
        elif cycle is not None and not cycle.response_started:
            # The application is left waiting for the body: from now on it reads a
            # disconnect, and whatever it sends is dropped rather than written after the 408.
            cycle.disconnected = True
            cycle.message_event.set()
            self.transport.write(_request_timeout(self.limits.read_timeout))
        self.transport.close()

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to a request its parser refuses, in the API's JSON shape."""
        if self._url_too_long:
            status, reason = 414, f"request URL longer than {MAX_URL_BYTES} bytes"
            answer = _json_error(status, "URI Too Long", reason, "uri_too_long")
        else:
            answer = _json_error(400, "Bad Request", "invalid HTTP request", "bad_request")
        self._stop_reading()
        self.transport.write(answer)
        self.transport.close()

    def _forget(self) -> None:
        self._stop_reading()
        self.book.waiting.pop(self, None)
        self.book.closing.discard(self)


class _HeadWithBody:
    """The transport a request's cycle writes to: the response's head, its first write once
    the response started, is held and written with the next write, in one, or alone at the end
    of the loop's turn. Writes before the response started (``100 Continue``) go out at once."""

    __slots__ = ("_cycle", "_head", "_head_seen", "_loop", "_transport")

    def __init__(
        self,
        transport: asyncio.Transport,
        loop: asyncio.AbstractEventLoop,
        cycle: RequestResponseCycle,
    ) -> None:
        self._transport = transport
        self._loop = loop
        self._cycle = cycle
        self._head: bytes | None = None
        self._head_seen = False

    def write(self, data: bytes) -> None:
        if not self._head_seen and self._cycle.response_started:
            self._head_seen = True
            self._head = data
            self._loop.call_soon(self._flush)
            return
        head, self._head = self._head, None
        self._transport.write(data if head is None else head + data)

    def _flush(self) -> None:
        head, self._head = self._head, None
        if head is not None and not self._transport.is_closing():
            self._transport.write(head)

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def close(self) -> None:
        self._flush()
        self._transport.close()


def _request_timeout(seconds: float) -> bytes:
    message = f"request not received within {seconds:g} s"
    return _json_error(408, "Request Timeout", message, "request_timeout")


def _json_error(status: int, reason: str, message: str, error_code: str) -> bytes:
    """A whole response, written by this protocol where no application answers."""
    body = json.dumps(error_body(message, error_code)).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\n"
        "content-type: application/json\r\n"
        f"content-length: {len(body)}\r\n"
        "connection: close\r\n\r\n"
    )
    return head.encode() + body


def protocol_class(limits: ConnectionLimits) -> type[BoundedHttpProtocol]:
    """A protocol class for one uvicorn server (``uvicorn.Config(http=...)``)."""

    class ServerHttpProtocol(BoundedHttpProtocol):
        pass

    ServerHttpProtocol.limits = limits
    ServerHttpProtocol.book = _Book()
    return ServerHttpProtocol
