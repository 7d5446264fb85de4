"""The periodic clean-up of what the server stores (``--retention-interval``): expired job
outputs (``retention``), registry garbage (``registry.garbage``), expired console sessions and
finished webhook deliveries (``webhooks``);
and on SQLite fresh statistics for the query planner (``store.planner``).
Run by the replica leading the sweeper only, so that replicas never collect the same things
twice at once; another replica takes over with the leadership.

Time between rounds is measured on the context's monotonic clock, so tests can move it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from benchrunner.server.context import ServerContext
from benchrunner.server.processing.webhooks import expire_deliveries
from benchrunner.server.recovery.retention import expire_outputs
from benchrunner.server.registry.garbage import collect_garbage
from benchrunner.server.store.planner import refresh_statistics
from benchrunner.server.store.sessions import sessions_expired_delete
from benchrunner.server.tasks import cancel_and_wait

log = logging.getLogger(__name__)


async def expire_console_sessions(ctx: ServerContext) -> None:
    await ctx.db.write(sessions_expired_delete, ctx.clock.now())


async def refresh_planner_statistics(ctx: ServerContext) -> None:
    await ctx.db.write(refresh_statistics)


class Housekeeping:
    def __init__(self, ctx: ServerContext, leads: Callable[[], bool]) -> None:
        self._ctx = ctx
        self._leads = leads
        self._task: asyncio.Task[None] | None = None
        self.rounds = 0
        """Rounds run so far by this replica (a signal tests wait on)."""

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="housekeeping")

    async def stop(self) -> None:
        await cancel_and_wait(self._task)

    async def _run(self) -> None:
        clock = self._ctx.monotonic
        while True:
            await clock.sleep_until(clock.monotonic() + self._ctx.settings.retention_interval)
            await self.step()

    async def step(self) -> bool:
        """One round if this replica leads: whether it ran. Each part's failure is logged and
        left to the next round."""
        if not self._leads():
            return False
        for name, part in (
            ("retention", expire_outputs),
            ("registry gc", collect_garbage),
            ("console sessions", expire_console_sessions),
            ("webhook deliveries", expire_deliveries),
            ("planner statistics", refresh_planner_statistics),
        ):
            try:
                await part(self._ctx)
            except Exception:
                log.exception("%s failed; trying again next round", name)
        self.rounds += 1
        self._ctx.metrics.housekeeping_rounds.inc()
        return True
