"""Wake-ups for waiting claims, within one server process and across replicas
(docs/decisions/claims.md).

``job_created`` and ``capacity_freed`` always wake this process's dispatcher at once. On
PostgreSQL they are also broadcast with ``NOTIFY`` on one channel, and every replica ``LISTEN``s
to it, so a job created through replica A reaches an idle runner waiting on replica B without a
poll. Payloads are ``<replica id> job <spec id>`` or ``<replica id> capacity``; a replica
ignores its own; anything else that arrives on the channel gives the dispatcher a full round,
which is always safe. After the listening connection is lost and regained, notifications may
have been missed, so the dispatcher gets a full round. A submission sends its job's
notification itself, from the statement that inserts the job (``job_broadcast``), so that it
costs no round trip of its own and goes out only if the job commits; it then wakes this
process alone (``job_created_here``).

The same connection listens for the lookups cache's invalidations (``store.lookups_cache``):
while it listens the cache is on and drops what each notification names; when it is lost the
cache is cleared and stays off until the connection listens again.

Both tasks outlive any error, not only the driver's: a failing connection is logged (without
the connection string) and retried after a delay that doubles up to ``RECONNECT_MAX_DELAY``; a
wake-up whose handling raises is logged and the listener carries on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Callable
from typing import Any, Protocol

import psycopg

from benchrunner.server.store import lookups_cache
from benchrunner.server.store.listen import (
    connect_session,
    describe_error,
    libpq_url,
    listen,
)
from benchrunner.server.store.lookups_cache import LookupCache

log = logging.getLogger(__name__)

CHANNEL = "benchrunner_wakeup"
RECONNECT_DELAY = 1.0
RECONNECT_MAX_DELAY = 30.0
STOP_TIMEOUT = 5.0


class Wakeable(Protocol):
    """What wake-ups wake: the dispatcher."""

    def job_created(self, spec_id: int) -> None: ...
    def capacity_freed(self) -> None: ...


class Wakeups(Protocol):
    def job_created(self, spec_id: int) -> None: ...
    def job_broadcast(self, spec_id: int) -> tuple[str, str] | None:
        """The ``(channel, payload)`` of the notification telling the other replicas of a new
        job of ``spec_id``, for the job's own transaction to send (None: there are none)."""
        ...

    def job_created_here(self, spec_id: int) -> None:
        """A job whose transaction sent ``job_broadcast``'s notification: wake this process."""
        ...

    def capacity_freed(self) -> None: ...
    async def start(self) -> None: ...
    async def stop(self) -> None: ...


class LocalWakeups:
    """One server process (SQLite): the dispatcher is all there is to wake."""

    def __init__(self, dispatcher: Wakeable) -> None:
        self._dispatcher = dispatcher

    def job_created(self, spec_id: int) -> None:
        self._dispatcher.job_created(spec_id)

    def job_broadcast(self, spec_id: int) -> tuple[str, str] | None:
        return None

    def job_created_here(self, spec_id: int) -> None:
        self._dispatcher.job_created(spec_id)

    def capacity_freed(self) -> None:
        self._dispatcher.capacity_freed()

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None


class PostgresWakeups:
    """Wake this replica at once and the others through LISTEN/NOTIFY."""

    def __init__(
        self, dispatcher: Wakeable, database_url: str, lookups: LookupCache | None = None
    ) -> None:
        self._dispatcher = dispatcher
        self._lookups = lookups
        self._conninfo = libpq_url(database_url)
        self.replica = secrets.token_hex(6)
        self._outbox: asyncio.Queue[str] = asyncio.Queue()
        self._tasks: list[asyncio.Task[None]] = []
        self.listening = asyncio.Event()
        """Set while the LISTEN connection is up (tests and health wait on it)."""

    def job_created(self, spec_id: int) -> None:
        self._dispatcher.job_created(spec_id)
        self._outbox.put_nowait(f"job {spec_id}")

    def job_broadcast(self, spec_id: int) -> tuple[str, str] | None:
        return CHANNEL, f"{self.replica} job {spec_id}"

    def job_created_here(self, spec_id: int) -> None:
        self._dispatcher.job_created(spec_id)

    def capacity_freed(self) -> None:
        self._dispatcher.capacity_freed()
        self._outbox.put_nowait("capacity")

    async def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._listen(), name="wakeups-listen"),
            asyncio.create_task(self._send(), name="wakeups-notify"),
        ]
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.listening.wait(), 10)

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        if self._tasks:
            _, pending = await asyncio.wait(self._tasks, timeout=STOP_TIMEOUT)
            if pending:
                log.warning("wake-up tasks did not stop within %.0f s; left behind", STOP_TIMEOUT)

    def _received(self, payload: str) -> None:
        replica, _, what = payload.partition(" ")
        if replica == self.replica:
            return
        kind, _, spec_id = what.partition(" ")
        if kind == "job" and spec_id.isascii() and spec_id.isdigit():
            self._dispatcher.job_created(int(spec_id))
        else:
            self._dispatcher.capacity_freed()

    def _deliver(self, wake: Callable[..., None], *args: str) -> None:
        try:
            wake(*args)
        except Exception:
            log.exception("handling a wake-up failed; the listener carries on")

    async def _listen(self) -> None:
        regained = False
        delay = RECONNECT_DELAY
        while True:
            try:
                conn = await connect_session(self._conninfo)
                # Closed, not left through `async with`, which would roll back: nothing to undo
                # on a connection that only listens, and a rollback could wait on a lost peer.
                try:
                    channels = [CHANNEL]
                    if self._lookups is not None:
                        channels.append(lookups_cache.CHANNEL)
                    received = await listen(conn, channels)
                    if self._lookups is not None:
                        self._lookups.enable()
                    self.listening.set()
                    delay = RECONNECT_DELAY
                    if regained:  # what was missed meanwhile: a full round
                        self._deliver(self._dispatcher.capacity_freed)
                    async for notify in received:
                        if notify.channel == lookups_cache.CHANNEL and self._lookups is not None:
                            self._deliver(self._lookups.received, notify.payload)
                        else:
                            self._deliver(self._received, notify.payload)
                finally:
                    if self._lookups is not None:
                        self._lookups.disable()
                    with contextlib.suppress(Exception):
                        await conn.close()
            except Exception as exc:
                log.warning(
                    "wake-up listener lost its connection (%s); reconnecting in %.0f s",
                    describe_error(exc, self._conninfo),
                    delay,
                )
            self.listening.clear()
            regained = True
            await asyncio.sleep(delay)
            delay = min(delay * 2, RECONNECT_MAX_DELAY)

    async def _send(self) -> None:
        conn: psycopg.AsyncConnection[Any] | None = None
        try:
            while True:
                payloads = {await self._outbox.get()}
                while not self._outbox.empty():  # a burst of jobs costs one NOTIFY per spec
                    payloads.add(self._outbox.get_nowait())
                try:
                    if conn is None or conn.closed:
                        conn = await connect_session(self._conninfo)
                    for payload in sorted(payloads):
                        await conn.execute(
                            "SELECT pg_notify(%s, %s)", (CHANNEL, f"{self.replica} {payload}")
                        )
                except Exception as exc:
                    # The other replicas' safety ticks cover what this broadcast would have woken.
                    log.warning(
                        "could not broadcast a wake-up (%s)", describe_error(exc, self._conninfo)
                    )
                    if conn is not None:
                        with contextlib.suppress(Exception):
                            await conn.close()
                    conn = None
        finally:
            if conn is not None:
                with contextlib.suppress(Exception):
                    await conn.close()
