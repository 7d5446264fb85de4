"""What both runner transports share: one WebSocket on which a runner reports a job.

The channel (``channel.py``) and the per-job socket (``job_socket.py``, see docs/decisions/)
differ in how a job reaches the runner; from ``running`` to the terminal result they are the
same session: messages read with a deadline, the lifecycle's transitions, the same replies.

While a job may be in flight, silence longer than the heartbeat timeout fails it (or cancels it
past its hard timeout) and ends the session. Only valid protocol messages move the deadline;
invalid ones get an ``error`` event (to a runner that announced the extension) and change
nothing. A subclass may suspend the deadline while it waits on something of its own (the
channel's outstanding ``ready``).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel, ValidationError
from starlette.requests import HTTPConnection
from starlette.routing import WebSocketRoute
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState

from benchrunner.core.states import IN_FLIGHT, JobStatus
from benchrunner.core.timeouts import TimeoutVerdict, hard_timeout_exceeded
from benchrunner.core.tokens import bearer, is_runner_token
from benchrunner.protocol import (
    ERROR_EXTENSION,
    Ack,
    Cancel,
    Canceled,
    Completed,
    Error,
    Failed,
    Heartbeat,
    Log,
    Ready,
    RunnerMessage,
    Running,
    close_reason,
    encode,
    explain_invalid,
    invalid_event,
)
from benchrunner.server.channel.lifecycle import Lifecycle, ResendLater
from benchrunner.server.logs.live_logs import Taken
from benchrunner.server.store import jobs, runners
from benchrunner.server.store.runners import RunnerRow

log = logging.getLogger(__name__)

CLOSE_NORMAL = 1000
CLOSE_POLICY = 1008
CLOSE_SUPERSEDED = 4001
CLOSE_INTERNAL_ERROR = 1011

HEARTBEAT = Heartbeat()
HEARTBEAT_TEXT = encode(HEARTBEAT)
"""A heartbeat exactly as our runner and Bencher's send it: most of what a runner sends, read
without parsing (any other text is parsed and validated)."""
HEARTBEAT_BYTES = HEARTBEAT_TEXT.encode()

ANSWER_AT_ONCE = "benchrunner.answer_at_once"
"""The scope extension (``scope["extensions"]``) of a WebSocket whose protocol can answer a
small text message itself (the server's, ``app/websocket_protocol.py``): ``{"install":
install}``, where ``install(answer)`` sets the function that answers (``AnswerAtOnce``), or
None to take it away."""

AnswerAtOnce = Callable[[bytes], bytes | None]
"""A small text message's UTF-8 bytes -> its reply's, or None: the message goes to the app's
``receive`` as any other."""


class RunnerSocket(WebSocket):
    """A runner's WebSocket: Starlette's for the handshake, the close and what the request says,
    and the connection's own ASGI ``receive`` and ``send`` for the messages. A runner's messages
    are most of what the server handles (a heartbeat a second per running job); through
    Starlette's wrappers (its state checks, and the ``send`` of each exception handler around
    the route) each would cost more than the session's own work for it
    (benchmarks/RESULTS.md, ``job_upkeep``)."""

    def __init__(self, scope: Scope, receive: Receive, send: Send) -> None:
        super().__init__(scope, receive, send)
        self.asgi_receive = receive
        self.asgi_send = send
        extension = scope.get("extensions", {}).get(ANSWER_AT_ONCE)
        self.answer_at_once: Callable[[AnswerAtOnce | None], None] | None = (
            None if extension is None else extension["install"]
        )
        """Sets the function that answers a message in the protocol, where it can."""


class _RunnerSocketApp:
    """The ASGI app of a runner socket route: an instance, not a function, so that Starlette
    hands it the connection rather than a ``WebSocket`` of its own."""

    def __init__(self, handler: Callable[[RunnerSocket], Awaitable[None]]) -> None:
        self.handler = handler

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.handler(RunnerSocket(scope, receive, send))


def runner_socket_route(
    path: str, handler: Callable[[RunnerSocket], Awaitable[None]]
) -> WebSocketRoute:
    """A WebSocket route whose handler gets a ``RunnerSocket`` (path parameters in
    ``path_params``)."""
    return WebSocketRoute(path, _RunnerSocketApp(handler), name=handler.__name__)


async def authenticate(
    connection: HTTPConnection, lifecycle: Lifecycle, runner_ref: str
) -> RunnerRow | None:
    """The runner of the path whose key the request bears (a WebSocket handshake or a claim)."""
    token = bearer(connection.headers.get("authorization"))
    if token is None or not is_runner_token(token):
        return None
    return await lifecycle.ctx.db.read(runners.runner_authenticate, runner_ref, token)


class RunnerSession:
    """One runner's WebSocket, from accept to close; ``run`` drives it."""

    def __init__(
        self,
        websocket: RunnerSocket,
        runner: RunnerRow,
        lifecycle: Lifecycle,
        extensions: frozenset[str] = frozenset(),
    ) -> None:
        self.ws = websocket
        self.extensions = extensions
        """What the runner announced it understands beyond Bencher's protocol."""
        self.runner = runner
        self.life = lifecycle
        self.ctx = lifecycle.ctx
        self.job: jobs.JobRow | None = None
        self._clock = lifecycle.ctx.monotonic
        self._silence_allowed = lifecycle.ctx.settings.heartbeat_timeout
        # Looked up once: a heartbeat answered at once is a few calls, each of these one.
        self._beat_remembered = lifecycle.heartbeats.beat_remembered
        self._wall_now = lifecycle.ctx.clock.now
        self._monotonic = lifecycle.ctx.monotonic.monotonic
        self._send_lock = asyncio.Lock()
        self._deadline = 0.0
        self._closed = False
        self._stopping = asyncio.Event()
        """Set when the session must end: closed, or superseded by a newer connection."""
        self._reading = False
        """Whether the loop waits for the runner's next message."""
        self._read_started = asyncio.Event()
        self._interruption: str | None = None
        """Why the loop must end: "stop" or "timeout" (``_guard``)."""
        self.superseded = False
        self._ack: tuple[Ack, str, bytes] | None = None
        """The ``ack`` of the job in flight, its text and that text's bytes: a heartbeat's
        answer, built and encoded once a job, not once a beat (``_job_ack``)."""
        self._seen_written: dt.datetime | None = None
        """When this session last wrote the runner's "last seen"."""

    # ------------------------------------------------------------ what subclasses decide

    def _parse(self, text: str) -> RunnerMessage:
        """The runner's message; raises ValidationError."""
        raise NotImplementedError

    async def _ready(self, message: Ready) -> None:
        raise NotImplementedError

    def _suspending(self) -> asyncio.Task[None] | None:
        """A wait of the subclass during which the runner may be silent (no deadline)."""
        return None

    def _closes_on_invalid(self) -> bool:
        """Whether an unreadable message ends the session (as Bencher's server does in some
        states) rather than being refused."""
        return False

    def _moves_deadline(self, message: RunnerMessage) -> bool:
        """Whether a valid message counts as a sign of life (all do, unless a subclass says)."""
        return True

    def _stop_waiting(self) -> None:
        self._stopping.set()

    async def _reply(self, to: RunnerMessage, reply: BaseModel) -> None:
        """Answer the runner's ``to``; a subclass may end the session after some answers."""
        await self.send(reply)

    # ------------------------------------------------------------ plumbing

    def _job_ack(self, job: uuid.UUID) -> Ack:
        """The ``ack`` naming ``job``: the one cached while it is the same job."""
        cached = self._ack
        if cached is None or (cached[0].job is not job and cached[0].job != job):
            ack = Ack(job=job)
            text = encode(ack)
            self._ack = cached = (ack, text, text.encode())
        return cached[0]

    async def send(self, message: BaseModel) -> None:
        cached = self._ack
        text = cached[1] if cached is not None and message is cached[0] else encode(message)
        async with self._send_lock:
            if self.ws.application_state != WebSocketState.CONNECTED:
                return
            try:
                await self.ws.asgi_send({"type": "websocket.send", "text": text})
            except OSError:  # the connection is gone (uvicorn's ClientDisconnected)
                self.ws.application_state = WebSocketState.DISCONNECTED
            except RuntimeError:
                pass  # a close under way

    async def refuse(
        self, reason: str, to: RunnerMessage | None = None, *, event: str | None = None
    ) -> None:
        """Tell the runner that its message ``to`` (or, unreadable, one of ``event``) was
        refused: an ``error`` event naming it, if the runner understands one; Bencher's server
        says nothing in these cases."""
        if ERROR_EXTENSION in self.extensions:
            error = Error(message=reason, reply_to=event)
            await self.send(error if to is None else error.answering(to))

    async def close(self, code: int, reason: str) -> None:
        if self._closed:
            return
        self._closed = True
        self._stop_waiting()
        with contextlib.suppress(RuntimeError, WebSocketDisconnect):
            await self.ws.close(code=code, reason=reason)

    def drop(self) -> None:
        """End the session without a close frame: the server drops the connection, as
        Bencher's server does when its channel handler gives up (the runner sees 1006)."""
        if self._closed:
            return
        self._closed = True
        self._stop_waiting()

    def supersede(self) -> None:
        """A newer connection took this one's place: stop at once, without waiting on this
        socket (it may be half-open); the session's own task sends the close frame."""
        self.superseded = True
        self._stop_waiting()

    def _reset_deadline(self) -> None:
        self._deadline = self._monotonic() + self._silence_allowed

    # ------------------------------------------------------------ the session

    async def run(self) -> None:
        self._reset_deadline()
        if self._stopping.is_set():  # superseded before it started
            await self.close(CLOSE_SUPERSEDED, "superseded")
            return
        try:
            await self._loop()
        except WebSocketDisconnect:
            pass
        finally:
            await self._end()

    async def _loop(self) -> None:
        """Read and handle messages until the session must end. The reads are awaited here,
        with no task or wait of their own per message; a guard task ends a read that outlives
        the deadline or the session (``_interrupt``)."""
        main = asyncio.current_task()
        assert main is not None
        guard = asyncio.create_task(self._guard(main))
        install = self.ws.answer_at_once
        if install is not None and self._moves_deadline(HEARTBEAT):
            install(self._answer_at_once)
        try:
            while not self._closed and self._interruption is None:
                self._reading = True
                self._read_started.set()
                try:
                    frame = await self.ws.asgi_receive()
                except asyncio.CancelledError:
                    if self._interruption is None or main.uncancel() > 0:
                        raise  # cancelled from outside, not by the guard
                    break
                finally:
                    self._reading = False
                if frame["type"] == "websocket.disconnect":
                    return
                text = frame.get("text")
                if isinstance(text, str):
                    await self._handle_text(text)
                else:
                    await self.refuse("binary messages are not part of the protocol")
            if self._interruption == "stop":
                if self.superseded:
                    log.info("runner %s reconnected: older socket closed", self.runner.slug)
                    await self.close(CLOSE_SUPERSEDED, "superseded")
            elif self._interruption == "timeout":
                await self._heartbeat_timeout()
        finally:
            if install is not None:
                install(None)
            guard.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await guard

    async def _guard(self, main: asyncio.Task[None]) -> None:
        """Wait until the session must stop, or the deadline passes while the runner is silent
        (no deadline while the subclass suspends it), then interrupt the read of ``main``."""
        stopping = asyncio.create_task(self._stopping.wait())
        timer: asyncio.Task[None] | None = None
        try:
            while True:
                suspending = self._suspending()
                waits: set[asyncio.Future[Any]] = {stopping}
                if suspending is not None and not suspending.done():
                    waits.add(suspending)
                else:
                    timer = asyncio.create_task(self._clock.sleep_until(self._deadline))
                    waits.add(timer)
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                if timer is not None:
                    timer.cancel()
                if stopping.done():
                    self._interrupt(main, "stop")
                    return
                if self._clock.monotonic() >= self._deadline and self._reading:
                    suspending = self._suspending()
                    if suspending is None or suspending.done():
                        self._interrupt(main, "timeout")
                        return
                if not self._reading:  # past the deadline while a message is handled
                    self._read_started.clear()
                    reading = asyncio.create_task(self._read_started.wait())
                    try:
                        await asyncio.wait({stopping, reading}, return_when=asyncio.FIRST_COMPLETED)
                    finally:
                        reading.cancel()
        finally:
            stopping.cancel()
            if timer is not None:
                timer.cancel()

    def _answer_at_once(self, payload: bytes) -> bytes | None:
        """A heartbeat's ``ack``, answered by the socket's protocol as soon as it is read
        (``ANSWER_AT_ONCE``), where this loop would answer it without waiting on anything: the
        loop waits for the next message (none is handled or unanswered), nothing else is being
        sent, and the job's heartbeat needs neither a write nor a cancel (the lifecycle's
        heartbeat ledger remembers it: ``HeartbeatLedger.beat_remembered``). As
        ``_handle_text`` would, it moves the deadline.
        None: the heartbeat, or any other message, is read by the loop. A subclass whose
        ``_reply`` does more than send a heartbeat's ``ack`` must answer None for it; one whose
        heartbeat does not move the deadline (``_moves_deadline``) is never answered here
        (``_loop`` installs this only when it does).

        Every heartbeat of every running job comes this way: its steps are written out here,
        with the callables they need looked up once (``__init__``)."""
        job = self.job
        if (
            payload != HEARTBEAT_BYTES
            or job is None
            or not self._reading
            or self._interruption is not None
            or self._closed
            or self._send_lock.locked()
            or self.ws.application_state is not WebSocketState.CONNECTED
            or not self._beat_remembered(job.id, self._wall_now())
        ):
            return None
        self._deadline = self._monotonic() + self._silence_allowed  # ``_reset_deadline``
        cached = self._ack
        if cached is None or cached[0].job is not job.uuid:
            self._job_ack(job.uuid)
            cached = self._ack
            assert cached is not None
        return cached[2]

    def _interrupt(self, main: asyncio.Task[None], why: str) -> None:
        """End the session's loop: its read at once, else after the message it handles."""
        self._interruption = why
        if self._reading:
            main.cancel()

    async def _handle_text(self, text: str) -> None:
        try:
            message = HEARTBEAT if text == HEARTBEAT_TEXT else self._parse(text)
        except ValidationError as exc:
            if self._closes_on_invalid():
                self.drop()
            else:
                await self.refuse(explain_invalid(exc), event=invalid_event(exc))
            return
        if self._moves_deadline(message):
            self._reset_deadline()
        try:
            await self._dispatch(message)
        except ResendLater as exc:
            log.warning("runner %s: %s; closing so that it resends", self.runner.slug, exc)
            await self.close(CLOSE_INTERNAL_ERROR, "resend the result")
        except Exception:
            log.exception("runner %s: handling %s failed", self.runner.slug, message.event)
            if isinstance(message, Completed | Failed | Canceled):
                # An ``error`` would make the runner drop its spooled result; closing makes it
                # resend on the next connection instead.
                await self.close(CLOSE_INTERNAL_ERROR, "internal error; resend the result")
            else:
                await self.refuse(f"internal error handling {message.event!r}", message)

    async def _dispatch(self, message: RunnerMessage) -> None:
        if self.job is None and isinstance(message, Ready | Heartbeat):
            await self._record_seen()  # a job's heartbeats write it with the job's
        if isinstance(message, Ready):
            await self._ready(message)
        elif isinstance(message, Running):
            await self._running(message)
        elif isinstance(message, Heartbeat):
            await self._heartbeat(message)
        elif isinstance(message, Log):
            await self._log(message)
        else:
            await self._terminal(message)

    async def _record_seen(self) -> None:
        """Keep an idle runner's "last seen" within one heartbeat write interval of the last
        message heard from it, at one write per interval at most."""
        now = self.ctx.clock.now()
        written = self._seen_written
        if written is not None and now - written < self.life.heartbeats.interval:
            return
        await self.ctx.db.write(runners.runner_touch, self.runner.id, now)
        self._seen_written = now

    async def _current(self, job_uuid: uuid.UUID | None) -> jobs.JobRow | None:
        if job_uuid is not None and (self.job is None or self.job.uuid != job_uuid):
            job = await self.ctx.db.read(jobs.job_get_by_uuid, job_uuid)
            if job is None or job.runner_id != self.runner.id:
                return None
            self.job = job
        return self.job

    async def _running(self, message: Running) -> None:
        job = await self._current(message.job)
        if job is None:
            await self.refuse("running: no job of this runner is in flight", message)
            return
        status, moved = await self.life.running(self.runner, job)
        if status is not None and self.job is job:
            self.job = moved  # with ``started`` as stored: its report's start (``completion``)
        if status in (JobStatus.CLAIMED, JobStatus.RUNNING):
            await self._reply(message, self._job_ack(job.uuid))
        elif status is None:
            await self.refuse(f"running: job {job.uuid} is not this runner's", message)
        else:
            await self._reply(message, Cancel(job=job.uuid))

    async def _heartbeat(self, message: Heartbeat) -> None:
        if self.job is None:
            if self.extensions:  # ours: Bencher's server ignores a heartbeat between jobs
                await self._reply(message, Ack())
            return
        job = self.job
        if await self.life.heartbeat(self.runner, job):
            await self._reply(message, Cancel(job=job.uuid))
            return
        await self._reply(message, self._job_ack(job.uuid))

    async def _log(self, message: Log) -> None:
        """Hold a chunk of the in-flight job's output, written within a second
        (``live_logs``); no reply unless it is refused."""
        job = self.job
        if job is None or job.uuid != message.job or job.status not in IN_FLIGHT:
            await self.refuse(f"log: job {message.job} is not in flight here", message)
            return
        self.life.live_logs.add(job.id, message, self._refuse_log)

    async def _refuse_log(self, message: Log) -> None:
        await self.refuse(f"log: job {message.job} is no longer in flight", message)

    async def _terminal(self, message: Completed | Failed | Canceled) -> None:
        taken = None
        if self.job is not None and self.job.uuid == message.job:
            # Its last chunks are stored by the move that ends it: its log is whole when the
            # job is seen finished. A chunk refused (the job left flight meanwhile) is
            # answered before the result is.
            taken = await self.life.live_logs.take_job(self.job.id)
        try:
            reply = await self.life.deliver(
                self.runner, message, self.job, None if taken is None else taken.tail
            )
        except BaseException:
            if taken is not None:
                # What a transaction that then failed stored may be gone: stored apart now (a
                # byte stored already is not stored twice, and a finished job's log never grows).
                taken.tail.stored = None
                await self.life.live_logs.settle(taken)
            raise
        try:
            await self._answer_terminal(message, reply, taken)
        finally:
            self.life.acknowledged(message.job)  # a completed job is processed after its ack

    async def _answer_terminal(
        self, message: Completed | Failed | Canceled, reply: Ack | Error, taken: Taken | None
    ) -> None:
        if taken is not None:
            await self.life.live_logs.settle(taken)
        if isinstance(reply, Error) and ERROR_EXTENSION not in self.extensions:
            if await self._still_to_deliver(message.job):
                # Bencher's server ends the connection when it fails to apply a result; the
                # runner resends it on its next connection.
                await self.close(CLOSE_INTERNAL_ERROR, "")
                return
            reply = Ack(job=message.job)  # as Bencher's server: acknowledged, nothing changed
        if isinstance(reply, Ack) and self.job is not None and self.job.uuid == message.job:
            self.ctx.log_watch.notify(self.job.id)  # followers of its log may end
            self.life.live_logs.forget(self.job.id)
            self.job = None
        await self._reply(message, reply if isinstance(reply, Ack) else reply.answering(message))

    async def _still_to_deliver(self, job_uuid: uuid.UUID) -> bool:
        """Whether the job is this runner's and still in flight (its result not applied)."""
        job = await self.ctx.db.read(jobs.job_get_by_uuid, job_uuid)
        return job is not None and job.runner_id == self.runner.id and job.status in IN_FLIGHT

    async def _heartbeat_timeout(self) -> None:
        reason = "heartbeat_timeout"
        if self.job is not None:
            verdict = await self.life.watchdog.judge(self.job.id)
            if verdict is TimeoutVerdict.RAN_TOO_LONG or (
                verdict is None and await self._ran_too_long(self.job.id)
            ):
                reason = "job_timeout_exceeded"
            self.job = None
        log.info("runner %s silent for the heartbeat timeout; closing", self.runner.slug)
        await self.close(CLOSE_NORMAL, close_reason(reason))

    async def _ran_too_long(self, job_id: int) -> bool:
        """Whether the job was canceled past its hard timeout: its disconnect timer may have
        judged it at the same moment as this session's deadline."""
        job = await self.ctx.db.read(jobs.job_get, job_id)
        return (
            job is not None
            and job.status == JobStatus.CANCELED
            and hard_timeout_exceeded(
                job.started, job.timeout, self.ctx.job_timeout_grace, self.ctx.clock.now()
            )
        )

    async def _end(self) -> None:
        if self.job is not None:
            job_id = self.job.id
            self.life.detach(job_id)
            self.job = None
            try:
                await self.life.live_logs.flush_job(job_id)
            except Exception:
                log.exception("runner %s: writing the live log at the end failed", self.runner.slug)
            self.life.live_logs.forget(job_id)
