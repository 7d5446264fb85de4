"""Which replica runs the sweeper (SPEC section 5): the holder of a PostgreSQL advisory lock.

The lock is session-level, held on a connection of its own for as long as that connection
lives. When the leader dies its connection closes, PostgreSQL releases the lock, and the next
replica to try takes it. On SQLite there is one server process, and it leads.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any, Protocol

import psycopg

from benchrunner.server.store.listen import libpq_url

log = logging.getLogger(__name__)

# Two-key advisory lock; the first key is the one tier_locks does not use.
SWEEPER_LOCK = (3, 0)


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
            if self._conn is None or self._conn.closed:
                self.leader = False
                self._conn = await psycopg.AsyncConnection.connect(
                    self._conninfo, autocommit=True, connect_timeout=5
                )
            if self.leader:
                await self._conn.execute("SELECT 1")  # still connected, so still holding it
            else:
                cursor = await self._conn.execute(
                    "SELECT pg_try_advisory_lock(%s, %s)", SWEEPER_LOCK
                )
                row = await cursor.fetchone()
                if row is not None and row[0]:
                    self.leader = True
                    log.info("this replica now leads the sweeper")
        except psycopg.Error as exc:
            if self.leader:
                log.warning("lost the sweeper leadership with its connection (%s)", exc)
            await self.release()
        return self.leader

    async def release(self) -> None:
        conn, self._conn = self._conn, None
        self.leader = False
        if conn is not None:
            with contextlib.suppress(psycopg.Error):
                await conn.close()
