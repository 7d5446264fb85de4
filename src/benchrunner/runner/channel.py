"""The runner's WebSocket channel: one connection, one receiver thread, thread-safe sends.

The receiver thread turns every frame into a ``ServerEvent`` (or, at the end, one
``ChannelLost``) in the agent's event queue. ``send`` may be called from the main thread and the
heartbeat thread at once; it also counts the messages that still await the server's reply, so the
agent knows which ``ack`` answers what (the server answers in order: docs/decisions/channel.md).
``open_socket`` and ``receive_messages`` serve the per-job transport's job sockets too.

Errors, as seen by the agent:

    ChannelRefusedError      handshake rejected with 401/403/404: bad, rotated or archived
                             runner key, or unknown runner. Retrying cannot help.
    ChannelUnavailableError  anything else while connecting (network, 5xx, timeout): retry.
    ChannelClosedError       a send on a connection that is gone: reconnect.
"""

from __future__ import annotations

import contextlib
import json
import logging
import queue
import threading
import urllib.parse
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError
from websockets.exceptions import ConnectionClosed, InvalidStatus, InvalidURI, WebSocketException
from websockets.sync.client import ClientConnection, connect

from benchrunner.protocol import (
    EXTENSIONS_HEADER,
    OUR_EXTENSIONS,
    JobAssigned,
    encode,
    parse_server_message,
)
from benchrunner.runner import pickup_trace
from benchrunner.runner.cores import CorePlan
from benchrunner.runner.events import AgentEvent, ChannelLost, ServerEvent, ServerMessage
from benchrunner.runner.transport import CountedReplies

log = logging.getLogger(__name__)
# websockets logs every handshake header at DEBUG, the runner key included: never below INFO.
_library_log = logging.getLogger(f"{__name__}.websockets")
_library_log.setLevel(logging.INFO)

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
FATAL_STATUSES = frozenset({401, 403, 404})
_NO_CLOSE_FRAME = 1006


class SocketError(Exception):
    """A handshake that failed; ``status`` and ``body``: the server's answer, if it gave one."""

    def __init__(
        self, message: str, status: int | None = None, body: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body = body or {}


class ChannelRefusedError(SocketError):
    pass


class ChannelUnavailableError(SocketError):
    pass


class ChannelClosedError(Exception):
    pass


def channel_url(host: str, runner: str) -> str:
    """``http(s)://host[/prefix]`` -> ``ws(s)://host[/prefix]/v0/runners/{runner}/channel``.

    Raises ValueError for a host that is not an http, https, ws or wss URL.
    """
    return runner_url(host, runner, "channel", websocket=True)


def runner_url(host: str, runner: str, tail: str, *, websocket: bool) -> str:
    """``{host}/v0/runners/{runner}/{tail}`` as a ws(s) or http(s) URL; raises ValueError for a
    host that is not an http, https, ws or wss URL."""
    parts = urllib.parse.urlsplit(host.strip())
    schemes = {"http": "ws", "https": "wss"} if websocket else {"ws": "http", "wss": "https"}
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https", "ws", "wss") or not parts.netloc:
        raise ValueError(f"runner host must be an http:// or https:// URL, got {host!r}")
    if not runner:
        raise ValueError("runner must be a runner UUID or slug")
    path = f"{parts.path.rstrip('/')}/v0/runners/{urllib.parse.quote(runner, safe='')}/{tail}"
    return urllib.parse.urlunsplit((schemes.get(scheme, scheme), parts.netloc, path, "", ""))


class Channel(CountedReplies):
    verified = True

    def __init__(
        self,
        connection: ClientConnection,
        generation: int,
        events: queue.SimpleQueue[AgentEvent],
        cores: CorePlan,
    ) -> None:
        super().__init__()
        self.generation = generation
        self._connection = connection
        self._events = events
        self._cores = cores
        self._receiver = threading.Thread(
            target=self._receive, name=f"channel-{generation}-receiver", daemon=True
        )

    @classmethod
    def open(
        cls,
        url: str,
        key: str,
        *,
        generation: int,
        events: queue.SimpleQueue[AgentEvent],
        cores: CorePlan,
        user_agent: str,
        extensions: Sequence[str] = OUR_EXTENSIONS,
        open_timeout: float = 10.0,
    ) -> Channel:
        """Connect and start receiving. Raises ChannelRefusedError or ChannelUnavailableError."""
        connection = open_socket(
            url,
            key,
            cores=cores,
            user_agent=user_agent,
            extensions=extensions,
            timeout=open_timeout,
        )
        channel = cls(connection, generation, events, cores)
        channel._receiver.start()
        return channel

    def send(self, message: BaseModel, *, expect_ack: bool = False) -> None:
        """Send one protocol message (a model of ``benchrunner.protocol``).

        Raises ChannelClosedError if the connection is gone.
        """
        data = encode(message)
        with self._lock:
            try:
                self._connection.send(data)
            except (ConnectionClosed, OSError) as exc:
                raise ChannelClosedError(str(exc)) from None
            if expect_ack:
                self._outstanding += 1

    def close(self, code: int = 1000, reason: str = "") -> None:
        with contextlib.suppress(Exception):
            self._connection.close(code, reason)

    def _receive(self) -> None:
        self._cores.pin_to_housekeeping()
        code, reason = receive_messages(self._connection, self.generation, self._events)
        self._events.put(ChannelLost(self.generation, code, reason))


def open_socket(
    url: str,
    key: str,
    *,
    cores: CorePlan,
    user_agent: str,
    extensions: Sequence[str] = OUR_EXTENSIONS,
    timeout: float = 10.0,
) -> ClientConnection:
    """A runner's authenticated WebSocket to ``url`` (the channel, or a job's socket).

    Raises ChannelRefusedError (401/403/404, or a bad URL) or ChannelUnavailableError.
    """
    try:
        with cores.housekeeping_affinity():  # the library's own threads inherit it
            return connect(
                url,
                additional_headers={
                    "Authorization": f"Bearer {key}",
                    EXTENSIONS_HEADER: ", ".join(extensions),
                },
                user_agent_header=user_agent,
                max_size=MAX_MESSAGE_BYTES,
                open_timeout=timeout,
                close_timeout=2.0,
                compression=None,  # small JSON messages: deflate costs more CPU than it saves
                logger=_library_log,
                legacy=True,
            )
    except InvalidStatus as exc:
        status = exc.response.status_code
        body = _response_body(exc.response.body)
        detail = f": {str(body.get('message', ''))[:200]}" if body.get("message") else ""
        if status in FATAL_STATUSES:
            message = f"server refused the runner's socket: HTTP {status}{detail}"
            raise ChannelRefusedError(message, status, body) from None
        raise ChannelUnavailableError(f"HTTP {status}{detail}", status, body) from None
    except InvalidURI as exc:
        raise ChannelRefusedError(f"invalid channel URL: {exc}") from None
    except (OSError, TimeoutError, WebSocketException) as exc:
        raise ChannelUnavailableError(str(exc) or type(exc).__name__) from None


def receive_messages(
    connection: ClientConnection,
    generation: int,
    events: queue.SimpleQueue[AgentEvent],
    seen: Callable[[ServerMessage], None] | None = None,
) -> tuple[int, str]:
    """Post every valid message of ``connection`` as a ``ServerEvent`` (then call ``seen``)
    until it closes; returns its close code and reason (1006: no close frame)."""
    code, reason = _NO_CLOSE_FRAME, ""
    try:
        while True:
            raw = connection.recv()
            received_ns = pickup_trace.now()
            try:
                message = parse_server_message(raw)
            except ValidationError as exc:
                log.warning("ignoring an invalid message from the server: %s", _short(exc))
                continue
            if pickup_trace.ENABLED and isinstance(message, JobAssigned):
                pickup_trace.job_received(message.uuid, received_ns)
            events.put(ServerEvent(generation, message))
            if seen is not None:
                seen(message)
    except ConnectionClosed as exc:
        if exc.rcvd is not None:
            code, reason = exc.rcvd.code, exc.rcvd.reason
    except Exception:
        log.exception("receiving from the server failed")
    return code, reason


def _response_body(body: bytes | bytearray | None) -> dict[str, Any]:
    """A refused handshake's JSON body (``message`` and more), or its text as ``message``."""
    if not body:
        return {}
    text = bytes(body).decode("utf-8", errors="replace")
    with contextlib.suppress(ValueError):
        data = json.loads(text)
        if isinstance(data, dict):
            return data
    return {"message": text}


def _short(exc: ValidationError) -> str:
    errors = exc.errors()
    if not errors:
        return str(exc)
    return f"{exc.error_count()} error(s), first: {errors[0]['loc']} {errors[0]['msg']}"
