"""Which replica runs the sweeper (docs/decisions/timeouts-recovery.md): the holder of a PostgreSQL
advisory lock.

The lock is session-level, held on a connection of its own for as long as that connection
lives. When the leader dies its connection closes, PostgreSQL releases the lock, and the next
replica to try takes it. On SQLite there is one server process, and it leads.

Any error while holding or taking the lock (not only the driver's) gives the leadership up and
is logged without the connection string; the sweeper tries again next interval, so a replica
that cannot reach the database simply does not lead. Connecting and checking are bounded in
time, so a blackholed database cannot stall the sweeper.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any, Protocol

import psycopg

from benchrunner.server.store.listen import connect_session, describe_error, libpq_url

log = logging.getLogger(__name__)

# Two-key advisory lock; the first key is the one tier_locks does not use.
SWEEPER_LOCK = (3, 0)
HOLD_TIMEOUT = 15.0
"""Seconds one check of the lock (connecting included) may take before the lead is given up."""


class Leadership(Protocol):
    leader: bool

    async def hold(self) -> bool:
        """Keep or try to take the leadership; whether this replica leads now."""
        ...

    async def release(self) -> None: ...


class SoleLeadership:
    """One server process: always the leader."""

    leader = True

    async def hold(self) -> bool:
        return True

    async def release(self) -> None:
        return None


class AdvisoryLockLeadership:
    def __init__(self, database_url: str) -> None:
        self._conninfo = libpq_url(database_url)
        self._conn: psycopg.AsyncConnection[Any] | None = None
        self.leader = False

    async def hold(self) -> bool:
        try:
            # asyncio.timeout, not wait_for: on Python 3.11 wait_for can swallow a cancel that
            # lands as the check finishes, and the sweeper would then never stop.
            async with asyncio.timeout(HOLD_TIMEOUT):
                await self._hold()
        except Exception as exc:
            if self.leader:
                log.warning(
                    "lost the sweeper leadership with its connection (%s)",
                    describe_error(exc, self._conninfo),
                )
            else:
                log.debug(
                    "could not try for the sweeper leadership (%s)",
                    describe_error(exc, self._conninfo),
                )
            await self.release()
        return self.leader

    async def _hold(self) -> None:
        if self._conn is None or self._conn.closed:
            self.leader = False
            self._conn = await connect_session(self._conninfo)
        if self.leader:
            await self._conn.execute("SELECT 1")  # still connected, so still holding it
            return
        cursor = await self._conn.execute("SELECT pg_try_advisory_lock(%s, %s)", SWEEPER_LOCK)
        row = await cursor.fetchone()
        if row is not None and row[0]:
            self.leader = True
            log.info("this replica now leads the sweeper")

    async def release(self) -> None:
        conn, self._conn = self._conn, None
        self.leader = False
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.close()
