"""One runner's WebSocket channel (docs/decisions/channel.md): ``/v0/runners/{runner}/channel``.

The session (``runner_session.py``, shared with the per-job socket) reads messages with a
deadline; while a ``ready`` is outstanding the runner is allowed to be quiet.

A runner has one live channel per server process: a new connection supersedes the older one,
which is closed with 4001 ``superseded`` and whose waiting ``ready`` is withdrawn, so a
half-open socket cannot take a job into the void.

Close codes: 1000 with the reason ``"heartbeat_timeout"`` or ``"job_timeout_exceeded"`` (a
JSON string, as Bencher's server writes it and Bencher's runner reads it), 1007 a text message
that is not UTF-8 (RFC 6455), 1008 the runner was archived or its key rotated, 1009 a message
over the size limit, 1011 the server failed storing a result (resend it), 1012 the server is
restarting, 4001 ``superseded``. A message Bencher's runner sends while idle that cannot be
read ends the channel without a close frame, as Bencher's server's handler returns then.

Extensions are negotiated (docs/decisions/channel.md): ``error`` events, ``nonce`` in the ``job``
message, template jobs and a bare ``ack`` go only to a runner that announced them (``ready``'s
``extensions``, or the handshake's ``Benchrunner-Extensions`` header before the first
``ready``). To a runner that announced none, Bencher's runner binary, the server answers as
Bencher's server does: it ignores what it would refuse, acknowledges a terminal message it will
not apply (nothing changes), and closes where Bencher's server ends the channel. A ``ready``
from it while the job this channel handed it is in flight is answered ``ack`` with that job,
which stays in flight, and is no sign of life (Bencher's server keeps the heartbeat deadline).
Our runner sends ``ready`` only once it holds no job, so to a runner that announced extensions
that job is lost: the claim that answers its ``ready`` refuses while the runner holds jobs, and
the lifecycle fails them first (``RunnerHoldsJobs``), at the dispatcher's next claim for it.

``update`` (docs/decisions/channel.md) answers a ``ready`` instead of a job when the runner
announced the ``update`` extension, runs Linux and its channel has a release it should install
(``server.runners.releases``). Bencher's runner understands ``update`` too, but what this server
publishes are benchrunner wheels: to Bencher's runner the server is one with no release for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid

from benchrunner.protocol import (
    DEFAULT_POLL_TIMEOUT,
    ERROR_EXTENSION,
    NONCE_EXTENSION,
    TEMPLATE_EXTENSION,
    UPDATE_EXTENSION,
    Ack,
    NoJob,
    Ready,
    RunnerMessage,
    RunnerMetadata,
    parse_runner_message,
)
from benchrunner.server.channel.lifecycle import Lifecycle
from benchrunner.server.channel.runner_session import CLOSE_POLICY, RunnerSession, RunnerSocket
from benchrunner.server.channel.runner_session import authenticate as authenticate
from benchrunner.server.runners import releases
from benchrunner.server.store import jobs, runners
from benchrunner.server.store.runners import RunnerRow

log = logging.getLogger(__name__)

RELEASE_CHECK_INTERVAL = 60.0
"""Seconds between a channel's looks for a newer runner release."""


class ChannelHub:
    """The live runner sockets of this process: channels and per-job sockets. The newest channel
    of each runner, and the newest socket of each job, supersedes the older one; shutdown closes
    them all with 1012."""

    def __init__(self) -> None:
        self.sessions: set[RunnerSession] = set()
        self._newest: dict[int, RunnerSession] = {}
        self._job_sockets: dict[int, RunnerSession] = {}

    def open(self, session: ChannelSession) -> None:
        """Register a new channel; the runner's older one on this process is superseded."""
        self._register(self._newest, session.runner.id, session)

    def open_job_socket(self, session: RunnerSession, job_id: int) -> None:
        """Register a job's socket; an older one for the same job is superseded."""
        self._register(self._job_sockets, job_id, session)

    def _register(self, newest: dict[int, RunnerSession], key: int, session: RunnerSession) -> None:
        older = newest.get(key)
        newest[key] = session
        self.sessions.add(session)
        if older is not None:
            older.supersede()

    def discard(self, session: RunnerSession) -> bool:
        """Forget an ended socket; True if its runner has no newer channel here."""
        self.sessions.discard(session)
        for newest in (self._newest, self._job_sockets):
            for key, value in list(newest.items()):
                if value is session:
                    del newest[key]
                    return newest is self._newest
        return False

    def connected_runner_ids(self) -> frozenset[int]:
        """The runners with a socket open to this process (not to other replicas)."""
        return frozenset(session.runner.id for session in self.sessions)

    async def close_all(self, code: int = 1012, reason: str = "server restarting") -> None:
        for session in list(self.sessions):
            await session.close(code, reason)

    async def close_runner(self, runner_id: int, reason: str) -> None:
        for session in list(self.sessions):
            if session.runner.id == runner_id:
                await session.close(CLOSE_POLICY, reason)


class ChannelSession(RunnerSession):
    def __init__(
        self,
        websocket: RunnerSocket,
        runner: RunnerRow,
        lifecycle: Lifecycle,
        extensions: frozenset[str] = frozenset(),
    ) -> None:
        super().__init__(websocket, runner, lifecycle, extensions)
        self._poll: asyncio.Task[None] | None = None
        self._metadata: RunnerMetadata | None = None
        self._release_checked: float | None = None
        """When this channel last looked for a release (monotonic seconds)."""
        self._handed_out: uuid.UUID | None = None
        """The job this channel last sent in a ``job`` message."""
        self._offered: set[str] = set()
        """Checksums of the releases offered on this channel: a runner that answers one with
        another ready failed to install it and gets jobs instead (on its next connection it
        is offered the release again)."""

    def _parse(self, text: str) -> RunnerMessage:
        return parse_runner_message(text)

    def _suspending(self) -> asyncio.Task[None] | None:
        return self._poll  # no deadline while a ready is outstanding

    def _closes_on_invalid(self) -> bool:
        # Bencher's server ends the channel on a message it cannot read while it waits for a
        # ready (and ignores one while polling or running a job).
        waiting = self.job is None and (self._poll is None or self._poll.done())
        return ERROR_EXTENSION not in self.extensions and waiting

    def _moves_deadline(self, message: RunnerMessage) -> bool:
        return self._mid_job_ready(message) is None

    def _mid_job_ready(self, message: RunnerMessage) -> jobs.JobRow | None:
        """The job in flight when ``message`` is a ``ready`` from a runner announcing no
        extensions (Bencher's) while the job this channel sent it (not one adopted on
        reconnecting) is in flight: answered ``ack``, the job kept, no sign of life."""
        if not isinstance(message, Ready) or self.job is None:
            return None
        announced = self.extensions if message.extensions is None else message.extensions
        return self.job if not announced and self.job.uuid == self._handed_out else None

    def _stop_waiting(self) -> None:
        super()._stop_waiting()
        if self._poll is not None and not self._poll.done():
            self._poll.cancel()  # a claim still landing for it is failed by the lifecycle

    async def run(self) -> None:
        in_flight = await self.ctx.db.read(jobs.job_list_in_flight_for_runner, self.runner.id)
        if in_flight:
            self.job = in_flight[-1]  # a runner reconnecting mid-job
        await super().run()

    async def _ready(self, message: Ready) -> None:
        mid_job = self._mid_job_ready(message)
        if message.extensions is not None:
            self.extensions = frozenset(message.extensions)
        if mid_job is not None:
            await self.send(Ack(job=mid_job.uuid))  # as Bencher's server, mid-job
            return
        if self._poll is not None and not self._poll.done():
            await self.refuse("a ready is already outstanding", message)
            return
        # A runner asks for work only when it holds none: whatever is still in flight for it is
        # lost, and failed before its claim (``Lifecycle.wait_for_job``).
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
        (docs/decisions/channel.md): only to a runner that announced the ``update`` extension, which
        installs our wheels (Bencher's runner binary could not), and once per release and
        channel."""
        if UPDATE_EXTENSION not in self.extensions:
            return False
        # A ready comes before every job: look for a release on the first, then at most once a
        # RELEASE_CHECK_INTERVAL, not with a read on every claim.
        now = time.monotonic()
        if self._release_checked is not None and now - self._release_checked < (
            RELEASE_CHECK_INTERVAL
        ):
            return False
        self._release_checked = now
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
            self.job, self._handed_out = job, job.uuid
            if NONCE_EXTENSION not in self.extensions:
                assigned = assigned.model_copy(update={"nonce": None})
            await self.send(assigned)
        self._reset_deadline()

    async def _end(self) -> None:
        if self._poll is not None and not self._poll.done():
            self._poll.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._poll
        await super()._end()
