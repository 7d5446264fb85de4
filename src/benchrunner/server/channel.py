"""One runner's WebSocket channel (seed 003): ``/v0/runners/{runner}/channel``.

The session reads messages with a deadline: while a job may be in flight, silence longer than
the heartbeat timeout fails it (or cancels it past its hard timeout) and ends the channel. Only
valid protocol messages move the deadline; invalid ones get an ``error`` event and change
nothing. While a ``ready`` is outstanding the runner is allowed to be quiet.

A runner has one live channel per server process: a new connection supersedes the older one,
which is closed with 4001 ``superseded`` and whose waiting ``ready`` is withdrawn, so a
half-open socket cannot take a job into the void.

Close codes: 1000 with the reason ``"heartbeat_timeout"`` or ``"job_timeout_exceeded"`` (a
JSON string, as Bencher's server writes it and Bencher's runner reads it), 1007 a text message
that is not UTF-8 (RFC 6455), 1008 the runner was archived or its key rotated, or Bencher's
runner sent an invalid message while idle, 1009 a message over the size limit, 1011 the
server failed storing a result (resend it), 1012 the server is restarting, 4001 ``superseded``.

Extensions are negotiated (SPEC section 5): ``error`` events, ``nonce`` in the ``job`` message,
template jobs and a bare ``ack`` go only to a runner that announced them (``ready``'s
``extensions``, or the handshake's ``Benchrunner-Extensions`` header before the first
``ready``). To a runner that announced none, Bencher's runner binary, the server answers as
Bencher's server does: it ignores what it would refuse, acknowledges a terminal message it will
not apply (nothing changes), and closes where Bencher's server ends the channel.

``update`` (seed 003) answers a ``ready`` instead of a job when the runner announced the
``update`` extension, runs Linux and its channel has a release it should install
(``server.releases``). Bencher's runner understands ``update`` too, but what this server
publishes are benchrunner wheels: to Bencher's runner the server is one with no release for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from typing import Any

from pydantic import BaseModel, ValidationError
from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState

from benchrunner.core.states import IN_FLIGHT, JobStatus
from benchrunner.core.timeouts import TimeoutVerdict
from benchrunner.core.tokens import bearer, is_runner_token
from benchrunner.protocol import (
    DEFAULT_POLL_TIMEOUT,
    ERROR_EXTENSION,
    NONCE_EXTENSION,
    TEMPLATE_EXTENSION,
    UPDATE_EXTENSION,
    Ack,
    Cancel,
    Canceled,
    Completed,
    Error,
    Failed,
    Heartbeat,
    Log,
    NoJob,
    Ready,
    RunnerMetadata,
    Running,
    close_reason,
    encode,
    explain_invalid,
    parse_runner_message,
)
from benchrunner.protocol import RunnerMessage as RunnerMessage
from benchrunner.server import releases
from benchrunner.server.lifecycle import Lifecycle
from benchrunner.server.store import job_logs, jobs, runners
from benchrunner.server.store.runners import RunnerRow

log = logging.getLogger(__name__)

CLOSE_NORMAL = 1000
CLOSE_POLICY = 1008
CLOSE_SUPERSEDED = 4001
CLOSE_INTERNAL_ERROR = 1011


class ChannelHub:
    """The live channels of this process: the newest one of each runner supersedes the rest,
    and shutdown closes them all with 1012."""

    def __init__(self) -> None:
        self.sessions: set[ChannelSession] = set()
        self._newest: dict[int, ChannelSession] = {}

    def open(self, session: ChannelSession) -> None:
        """Register a new channel; the runner's older one on this process is superseded."""
        older = self._newest.get(session.runner.id)
        self._newest[session.runner.id] = session
        self.sessions.add(session)
        if older is not None:
            older.supersede()

    def discard(self, session: ChannelSession) -> bool:
        """Forget an ended channel; True if its runner has no newer one here."""
        self.sessions.discard(session)
        if self._newest.get(session.runner.id) is session:
            del self._newest[session.runner.id]
            return True
        return False

    def connected_runner_ids(self) -> frozenset[int]:
        """The runners with a channel open to this process (not to other replicas)."""
        return frozenset(self._newest)

    async def close_all(self, code: int = 1012, reason: str = "server restarting") -> None:
        for session in list(self.sessions):
            await session.close(code, reason)

    async def close_runner(self, runner_id: int, reason: str) -> None:
        for session in list(self.sessions):
            if session.runner.id == runner_id:
                await session.close(CLOSE_POLICY, reason)


async def authenticate(
    websocket: WebSocket, lifecycle: Lifecycle, runner_ref: str
) -> RunnerRow | None:
    token = bearer(websocket.headers.get("authorization"))
    if token is None or not is_runner_token(token):
        return None
    return await lifecycle.ctx.db.read(runners.runner_authenticate, runner_ref, token)


class ChannelSession:
    def __init__(
        self,
        websocket: WebSocket,
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
        self._poll: asyncio.Task[None] | None = None
        self._send_lock = asyncio.Lock()
        self._deadline = 0.0
        self._closed = False
        self._stopping = asyncio.Event()
        """Set when the session must end: closed, or superseded by a newer channel."""
        self.superseded = False
        self._metadata: RunnerMetadata | None = None
        self._log_full: set[tuple[int, str]] = set()
        """(job id, stream) whose log reached its size limit: later chunks cost no query."""
        self._offered: set[str] = set()
        """Checksums of the releases offered on this channel: a runner that answers one with
        another ready failed to install it and gets jobs instead (on its next connection it
        is offered the release again)."""

    # ------------------------------------------------------------ plumbing

    async def send(self, message: BaseModel) -> None:
        async with self._send_lock:
            if self.ws.application_state == WebSocketState.CONNECTED:
                with contextlib.suppress(RuntimeError, WebSocketDisconnect):
                    await self.ws.send_text(encode(message))

    async def refuse(self, reason: str) -> None:
        """Tell the runner a message was refused: an ``error`` event if it understands one;
        Bencher's server says nothing in these cases."""
        if ERROR_EXTENSION in self.extensions:
            await self.send(Error(message=reason))

    async def close(self, code: int, reason: str) -> None:
        if self._closed:
            return
        self._closed = True
        self._stop_waiting()
        with contextlib.suppress(RuntimeError, WebSocketDisconnect):
            await self.ws.close(code=code, reason=reason)

    def supersede(self) -> None:
        """A newer channel of this runner opened: stop at once, without waiting on this socket
        (it may be half-open); the session's own task sends the close frame."""
        self.superseded = True
        self._stop_waiting()

    def _stop_waiting(self) -> None:
        self._stopping.set()
        if self._poll is not None and not self._poll.done():
            self._poll.cancel()  # a claim still landing for it is failed by the lifecycle

    def _reset_deadline(self) -> None:
        self._deadline = self._clock.monotonic() + self.ctx.settings.heartbeat_timeout

    # ------------------------------------------------------------ the session

    async def run(self) -> None:
        in_flight = await self.ctx.db.read(jobs.job_list_in_flight_for_runner, self.runner.id)
        if in_flight:
            self.job = in_flight[-1]  # a runner reconnecting mid-job
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
        receiving: asyncio.Task[Any] | None = None
        timer: asyncio.Task[None] | None = None
        stopping = asyncio.create_task(self._stopping.wait())
        try:
            while not self._closed:
                if receiving is None:
                    receiving = asyncio.create_task(self.ws.receive())
                waits: set[asyncio.Future[Any]] = {receiving, stopping}
                if self._poll is not None and not self._poll.done():
                    waits.add(self._poll)  # no deadline while a ready is outstanding
                else:
                    if timer is None or timer.done():
                        timer = asyncio.create_task(self._clock.sleep_until(self._deadline))
                    waits.add(timer)
                done, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                if stopping in done:
                    if self.superseded:
                        log.info("runner %s reconnected: older channel closed", self.runner.slug)
                        await self.close(CLOSE_SUPERSEDED, "superseded")
                    return
                if receiving in done:
                    frame, receiving = receiving.result(), None
                    if frame["type"] == "websocket.disconnect":
                        return
                    text = frame.get("text")
                    if isinstance(text, str):
                        await self._handle_text(text)
                    else:
                        await self.refuse("binary messages are not part of the protocol")
                elif timer in done and self._clock.monotonic() >= self._deadline:
                    await self._heartbeat_timeout()
                    return
        finally:
            for task in (receiving, timer, stopping):
                if task is not None:
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError, WebSocketDisconnect):
                        await task

    async def _handle_text(self, text: str) -> None:
        try:
            message = parse_runner_message(text)
        except ValidationError as exc:
            waiting = self.job is None and (self._poll is None or self._poll.done())
            if ERROR_EXTENSION not in self.extensions and waiting:
                # Bencher's server ends the channel on a message it cannot read while it
                # waits for a ready (and ignores one while polling or running a job).
                await self.close(CLOSE_POLICY, "")
            else:
                await self.refuse(explain_invalid(exc))
            return
        self._reset_deadline()
        try:
            await self._dispatch(message)
        except Exception:
            log.exception("runner %s: handling %s failed", self.runner.slug, message.event)
            if isinstance(message, Completed | Failed | Canceled):
                # An ``error`` would make the runner drop its spooled result; closing makes it
                # resend on the next connection instead.
                await self.close(CLOSE_INTERNAL_ERROR, "internal error; resend the result")
            else:
                await self.refuse(f"internal error handling {message.event!r}")

    async def _dispatch(self, message: RunnerMessage) -> None:
        if isinstance(message, Ready):
            await self._ready(message)
        elif isinstance(message, Running):
            await self._running(message)
        elif isinstance(message, Heartbeat):
            await self._heartbeat()
        elif isinstance(message, Log):
            await self._log(message)
        else:
            await self._terminal(message)

    async def _ready(self, message: Ready) -> None:
        if message.extensions is not None:
            self.extensions = frozenset(message.extensions)
        if self._poll is not None and not self._poll.done():
            await self.refuse("a ready is already outstanding")
            return
        # A runner asks for work only when it holds none: whatever is still in flight for it is
        # lost, whether this channel knew it or it was claimed into an older, half-open one.
        for lost in await self.ctx.db.read(jobs.job_list_in_flight_for_runner, self.runner.id):
            await self.life.runner_abandoned(self.runner, lost)
        self.job = None
        metadata = message.metadata()
        if metadata != self._metadata:  # the same on every ready: write it once
            now = self.ctx.clock.now()
            await self.ctx.db.write(runners.runner_record_metadata, self.runner.id, metadata, now)
            self._metadata = metadata
        if await self._offer_update(message):
            return
        poll_timeout = message.poll_timeout or DEFAULT_POLL_TIMEOUT
        self._poll = asyncio.create_task(self._wait_for_job(poll_timeout))

    async def _offer_update(self, ready: Ready) -> bool:
        """Answer ``ready`` with ``update`` when a newer release of the runner's channel waits
        (seed 003): only to a runner that announced the ``update`` extension, which installs
        our wheels (Bencher's runner binary could not), and once per release and channel."""
        if UPDATE_EXTENSION not in self.extensions:
            return False
        release = await releases.offer(self.ctx, ready)
        if release is None or release.checksum in self._offered:
            return False
        self._offered.add(release.checksum)
        base = str(self.ws.base_url)
        http_base = "https" + base[3:] if base.startswith("wss:") else "http" + base[2:]
        log.info("runner %s offered release %s", self.runner.slug, release.version)
        await self.send(releases.update_message(http_base, self.runner.uuid, release))
        return True

    async def _wait_for_job(self, poll_timeout: float) -> None:
        try:
            templates = TEMPLATE_EXTENSION in self.extensions
            found = await self.life.wait_for_job(self.runner, poll_timeout, templates=templates)
        except Exception:
            log.exception("runner %s: waiting for a job failed", self.runner.slug)
            found = None
        if found is not None and self._stopping.is_set():
            self.life.undelivered(found[0])  # never into a closed or superseded channel
            return
        if found is None:
            await self.send(NoJob())
        else:
            job, assigned = found
            self.job = job
            if NONCE_EXTENSION not in self.extensions:
                assigned = assigned.model_copy(update={"nonce": None})
            await self.send(assigned)
        self._reset_deadline()

    async def _current(self, job_uuid: object | None) -> jobs.JobRow | None:
        if job_uuid is not None and (self.job is None or self.job.uuid != job_uuid):
            job = await self.ctx.db.read(jobs.job_get_by_uuid, job_uuid)
            if job is None or job.runner_id != self.runner.id:
                return None
            self.job = job
        return self.job

    async def _running(self, message: Running) -> None:
        job = await self._current(message.job)
        if job is None:
            await self.refuse("running: no job of this runner is in flight")
            return
        status = await self.life.running(self.runner, job)
        if status is not None and self.job is job:
            # ``started`` as the transition set it, give or take its write: what the next
            # transition's duration is measured from.
            started = job.started or self.life.ctx.clock.now()
            self.job = dataclasses.replace(job, status=status, started=started)
        if status in (JobStatus.CLAIMED, JobStatus.RUNNING):
            await self.send(Ack(job=job.uuid))
        elif status is None:
            await self.refuse(f"running: job {job.uuid} is not this runner's")
        else:
            await self.send(Cancel(job=job.uuid))

    async def _heartbeat(self) -> None:
        if self.job is None:
            if self.extensions:  # ours: Bencher's server ignores a heartbeat between jobs
                await self.send(Ack())
            return
        cancel = await self.life.heartbeat(self.runner, self.job)
        await self.send(Cancel(job=self.job.uuid) if cancel else Ack(job=self.job.uuid))

    async def _log(self, message: Log) -> None:
        """Store a chunk of the in-flight job's output; no reply unless it is refused."""
        job = self.job
        if job is None or job.uuid != message.job or job.status not in IN_FLIGHT:
            await self.refuse(f"log: job {message.job} is not in flight here")
            return
        if (job.id, message.stream) in self._log_full:
            return
        appended = await self.ctx.db.write(
            job_logs.job_log_append,
            job.id,
            message.stream,
            message.offset,
            message.data,
            self.ctx.settings.job_log_max_bytes,
        )
        if appended is job_logs.Appended.NOT_IN_FLIGHT:
            await self.refuse(f"log: job {message.job} is no longer in flight")
            return
        if appended is job_logs.Appended.OVER_LIMIT:
            self._log_full = {key for key in self._log_full if key[0] == job.id}
            self._log_full.add((job.id, message.stream))
        self.ctx.log_watch.notify(job.id)

    async def _terminal(self, message: Completed | Failed | Canceled) -> None:
        reply = await self.life.deliver(self.runner, message, self.job)
        if isinstance(reply, Error) and ERROR_EXTENSION not in self.extensions:
            if await self._still_to_deliver(message.job):
                # Bencher's server ends the channel when it fails to apply a result; the
                # runner resends it on its next connection.
                await self.close(CLOSE_INTERNAL_ERROR, "")
                return
            reply = Ack(job=message.job)  # as Bencher's server: acknowledged, nothing changed
        if isinstance(reply, Ack) and self.job is not None and self.job.uuid == message.job:
            self.ctx.log_watch.notify(self.job.id)  # followers of its log may end
            self.job = None
        await self.send(reply)

    async def _still_to_deliver(self, job_uuid: object) -> bool:
        """Whether the job is this runner's and still in flight (its result not applied)."""
        job = await self.ctx.db.read(jobs.job_get_by_uuid, job_uuid)
        return job is not None and job.runner_id == self.runner.id and job.status in IN_FLIGHT

    async def _heartbeat_timeout(self) -> None:
        reason = "heartbeat_timeout"
        if self.job is not None:
            verdict = await self.life.watchdog.judge(self.job.id)
            if verdict is TimeoutVerdict.RAN_TOO_LONG:
                reason = "job_timeout_exceeded"
            self.job = None
        log.info("runner %s silent for the heartbeat timeout; closing", self.runner.slug)
        await self.close(CLOSE_NORMAL, close_reason(reason))

    async def _end(self) -> None:
        if self._poll is not None and not self._poll.done():
            self._poll.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._poll
        if self.job is not None:
            self.life.detach(self.job.id)
            self.job = None
