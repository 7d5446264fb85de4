"""The per-job transport (docs/decisions/per-job-transport.md): jobs are claimed with a long-poll
``POST /v0/runners/{runner}/jobs``, and each job is reported on its own WebSocket
``/v0/runners/{runner}/jobs/{job}``.

To the agent it is a ``Transport`` like the channel: ``ready`` starts a claim (a thread that
posts the job, or ``no_job``, as the channel's receiver would), every other message goes to its
job's socket (opened when first needed, closed once its result is acknowledged), and replies
come back as ``ServerEvent``s. The server closes a job's socket itself once the job ends there
(1000 with ``"job_completed"``, ``"job_canceled"``, ...): after a ``cancel`` that is no loss, and
the runner's ``canceled`` then finds the job's socket refused. A job whose socket the server
refuses because the job is no longer the runner's to report is answered as the channel answers
such a message: ``running`` and heartbeats with ``cancel``; a result with ``ack`` if the job is
already completed or canceled, else with ``error`` (dropped from the spool; the per-job socket
takes only claimed or running jobs).

Losing a job's socket, or a claim that fails with no HTTP answer or a 5xx, is the loss of the
transport (``ChannelLost``): the agent reconnects with backoff and announces ``running`` again.
A claim refused with 401/403/404 is ``TransportRefused``: retrying cannot help.
"""

from __future__ import annotations

import contextlib
import json
import logging
import queue
import threading
import uuid
from collections.abc import Sequence
from typing import Any

import httpx
from pydantic import BaseModel, ValidationError
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection

from benchrunner.core.clock import SystemThreadClock, ThreadClock
from benchrunner.protocol import (
    EXTENSIONS_HEADER,
    JOB_SOCKET_ENDINGS,
    MAX_POLL_TIMEOUT,
    OUR_EXTENSIONS,
    Ack,
    Cancel,
    Canceled,
    Completed,
    Error,
    Failed,
    Heartbeat,
    NoJob,
    Ready,
    Running,
    close_reason,
    encode,
    parse_server_message,
)
from benchrunner.runner.channel import (
    FATAL_STATUSES,
    ChannelClosedError,
    SocketError,
    open_socket,
    receive_messages,
    runner_url,
)
from benchrunner.runner.cores import CorePlan
from benchrunner.runner.events import (
    AgentEvent,
    ChannelLost,
    ServerEvent,
    ServerMessage,
    TransportRefused,
)
from benchrunner.runner.transport import CountedReplies

log = logging.getLogger(__name__)

MAX_CLAIM_POLL_TIMEOUT = 600
"""The per-job transport's longest long-poll (``ready`` allows ``MAX_POLL_TIMEOUT``)."""
CLAIM_REPLY_MARGIN = 30.0
MAX_RETRY_AFTER = 60.0
CONNECTION_FAILED = 1006
SERVER_ERROR = 1011
_FINISHED = frozenset({"completed", "processed"})
_ENDED = frozenset((1000, close_reason(reason)) for reason in JOB_SOCKET_ENDINGS.values())
"""Close codes and reasons (JSON strings, as Bencher's server writes them) of a job socket the
server closed because the job ended there."""

assert MAX_CLAIM_POLL_TIMEOUT <= MAX_POLL_TIMEOUT


class _JobSocket:
    def __init__(self, job: uuid.UUID, connection: ClientConnection) -> None:
        self.job = job
        self.connection = connection
        self.result_sent = False
        self.closing = False
        """Closed by us (its result acknowledged, or the transport closed): not a loss."""


class PerJobTransport(CountedReplies):
    verified = False

    def __init__(
        self,
        host: str,
        runner: str,
        key: str,
        *,
        generation: int,
        events: queue.SimpleQueue[AgentEvent],
        cores: CorePlan,
        user_agent: str,
        extensions: Sequence[str] = OUR_EXTENSIONS,
        clock: ThreadClock | None = None,
    ) -> None:
        """``clock``: how long a claim the server refused for now (``429``) waits (the
        agent's)."""
        super().__init__()
        self.generation = generation
        self._host = host
        self._runner = runner
        self._key = key
        self._events = events
        self._cores = cores
        self._user_agent = user_agent
        self._extensions = extensions
        self._claim_url = runner_url(host, runner, "jobs", websocket=False)
        self._sockets: dict[uuid.UUID, _JobSocket] = {}
        self._current: uuid.UUID | None = None
        """The job that said ``running`` last: where a heartbeat (which names none) goes."""
        self._closed = threading.Event()
        self._clock = clock or SystemThreadClock()
        self._wake = threading.Condition()
        """Notified when the transport closes: a claim's pause ends then."""
        self._http = httpx.Client(
            headers={
                "Authorization": f"Bearer {key}",
                EXTENSIONS_HEADER: ", ".join(extensions),
                "User-Agent": user_agent,
            }
        )

    # ------------------------------------------------------------ Transport

    def send(self, message: BaseModel, *, expect_ack: bool = False) -> None:
        if self._closed.is_set():
            raise ChannelClosedError("the per-job transport is closed")
        if isinstance(message, Ready):
            threading.Thread(
                target=self._claim,
                args=(min(message.poll_timeout or 30, MAX_CLAIM_POLL_TIMEOUT),),
                name=f"claim-{self.generation}",
                daemon=True,
            ).start()
            return
        job = getattr(message, "job", None)
        if job is None and isinstance(message, Heartbeat | Running):
            job = self._current
        if not isinstance(job, uuid.UUID):
            log.debug("not sent: %s names no job", type(message).__name__)
            return
        with self._lock:
            socket = self._socket_for(job, message)
            if socket is not None and not self._send_on(socket, message):
                socket = self._socket_for(job, message)  # refused now, and answered so
                if socket is not None and not self._send_on(socket, message):
                    raise ChannelClosedError(f"job {job}'s socket closed at once")
            if socket is None:  # answered already, as the server would have
                if expect_ack:
                    self._outstanding += 1
                return
            if isinstance(message, Running):
                self._current = job
            if isinstance(message, Completed | Failed | Canceled):
                socket.result_sent = True
            if expect_ack:
                self._outstanding += 1

    def close(self, code: int = 1000, reason: str = "") -> None:
        self._closed.set()
        with self._wake:
            self._wake.notify_all()
        with self._lock:
            sockets, self._sockets = list(self._sockets.values()), {}
        for socket in sockets:
            socket.closing = True
            with contextlib.suppress(Exception):
                socket.connection.close(code, reason)
        with contextlib.suppress(Exception):
            self._http.close()

    # ------------------------------------------------------------ a job's socket

    def _socket_for(self, job: uuid.UUID, message: BaseModel) -> _JobSocket | None:
        """The job's open socket, opened if needed (with ``_lock`` held); None when the server
        refused it and the refusal was answered in the event queue."""
        socket = self._sockets.get(job)
        if socket is not None:
            return socket
        url = runner_url(self._host, self._runner, f"jobs/{job}", websocket=True)
        try:
            connection = open_socket(
                url,
                self._key,
                cores=self._cores,
                user_agent=self._user_agent,
                extensions=self._extensions,
            )
        except SocketError as exc:
            if exc.status in (404, 409):
                self._post(self._answer_refused_job(job, message, exc))
                return None
            if exc.status in FATAL_STATUSES:
                self._events.put(TransportRefused(self.generation, str(exc)))
                return None
            raise ChannelClosedError(f"cannot open job {job}'s socket: {exc}") from None
        socket = _JobSocket(job, connection)
        self._sockets[job] = socket
        threading.Thread(
            target=self._receive, args=(socket,), name=f"job-{job}-receiver", daemon=True
        ).start()
        return socket

    def _send_on(self, socket: _JobSocket, message: BaseModel) -> bool:
        """Send ``message`` on the job's socket (with ``_lock`` held). False when the server had
        closed it because the job ended there (the socket is forgotten); raises
        ChannelClosedError when it was lost."""
        try:
            socket.connection.send(encode(message))
        except (ConnectionClosed, OSError) as exc:
            closed = exc.rcvd if isinstance(exc, ConnectionClosed) else None
            if closed is None or (closed.code, closed.reason) not in _ENDED:
                raise ChannelClosedError(str(exc)) from None
            socket.closing = True
            if self._sockets.get(socket.job) is socket:
                del self._sockets[socket.job]
            return False
        return True

    @staticmethod
    def _answer_refused_job(job: uuid.UUID, message: BaseModel, exc: SocketError) -> ServerMessage:
        status = exc.body.get("status")
        if isinstance(message, Completed | Failed | Canceled):
            if status in _FINISHED:
                return Ack(job=job)  # delivered before; its ack was lost with a connection
            if status == "canceled":
                # Canceled by the server (its socket closed after the cancel): the runner's
                # answer, or a result that crossed the cancel, changes nothing.
                log.info("job %s was canceled: its %s result is not kept", job, message.event)
                return Ack(job=job)
            refusal = f"result of job {job} not accepted: {exc}"
            return Error(message=refusal, reply_to=message.event, job=job)
        log.info("job %s is no longer this runner's to run (%s)", job, exc)
        return Cancel(job=job)

    def _receive(self, socket: _JobSocket) -> None:
        self._cores.pin_to_housekeeping()

        def seen(message: ServerMessage) -> None:
            if isinstance(message, Ack) and message.job == socket.job and socket.result_sent:
                self._finished(socket)

        code, reason = receive_messages(socket.connection, self.generation, self._events, seen)
        if socket.closing or self._closed.is_set():
            return
        if (code, reason) in _ENDED and not socket.result_sent:
            self._finished(socket)  # e.g. after a cancel: the job ended on the server's side
            return
        # Lost; or closed with a result unacknowledged: reconnecting resends it.
        self._events.put(ChannelLost(self.generation, code, reason))

    def _finished(self, socket: _JobSocket) -> None:
        """The job's result was acknowledged: its socket has served."""
        socket.closing = True
        with self._lock:
            if self._sockets.get(socket.job) is socket:
                del self._sockets[socket.job]
            if self._current == socket.job:
                self._current = None
        with contextlib.suppress(Exception):
            socket.connection.close(1000, "")

    # ------------------------------------------------------------ the claim

    def _claim(self, poll_timeout: int) -> None:
        self._cores.pin_to_housekeeping()
        timeout = httpx.Timeout(10.0, read=poll_timeout + CLAIM_REPLY_MARGIN)
        try:
            response = self._http.post(
                self._claim_url, json={"poll_timeout": poll_timeout}, timeout=timeout
            )
        except (httpx.HTTPError, RuntimeError) as exc:  # RuntimeError: the client was closed
            self._lost(CONNECTION_FAILED, f"claim failed: {exc or type(exc).__name__}")
            return
        status = response.status_code
        if status == 200:
            self._claimed(response)
        elif status == 429:
            self._pause(_retry_after(response))
            self._post(NoJob())
        elif status in FATAL_STATUSES:
            message = f"server refused the runner's claim: HTTP {status}{_detail(response)}"
            self._events.put(TransportRefused(self.generation, message))
        elif status < 500:
            refusal = f"claim refused: HTTP {status}{_detail(response)}"
            self._post(Error(message=refusal, reply_to="ready"))
        else:
            self._lost(SERVER_ERROR, f"claim failed: HTTP {status}{_detail(response)}")

    def _claimed(self, response: httpx.Response) -> None:
        try:
            data = response.json()
            message: ServerMessage = (
                NoJob()
                if data is None
                else parse_server_message(json.dumps({**data, "event": "job"}))
            )
        except (ValueError, TypeError, ValidationError) as exc:
            self._lost(SERVER_ERROR, f"the claim's answer is not a claimed job: {exc}")
            return
        self._post(message)

    def _pause(self, seconds: float) -> None:
        """Return once ``seconds`` have passed on the clock, or the transport closed."""
        deadline = self._clock.monotonic() + seconds
        with self._wake:
            while not self._closed.is_set() and self._clock.monotonic() < deadline:
                self._clock.wait(self._wake, deadline)

    def _post(self, message: ServerMessage) -> None:
        if not self._closed.is_set():
            self._events.put(ServerEvent(self.generation, message))

    def _lost(self, code: int, reason: str) -> None:
        if not self._closed.is_set():
            self._events.put(ChannelLost(self.generation, code, reason))


def _retry_after(response: httpx.Response) -> float:
    try:
        return min(MAX_RETRY_AFTER, max(1.0, float(response.headers.get("retry-after", "1"))))
    except ValueError:
        return 1.0


def _detail(response: httpx.Response) -> str:
    body: Any
    try:
        body = response.json()
    except ValueError:
        body = None
    text = body.get("message") if isinstance(body, dict) else response.text
    return f": {str(text)[:200]}" if text else ""
