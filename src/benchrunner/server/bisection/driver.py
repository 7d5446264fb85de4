"""Starts the bisections that bisect thresholds' alerts asked for (``auto``), and runs
bisections forward: a move (``advance``) of every running bisection each time a job
may have finished on this replica (``wake``: the lifecycle calls it when a job leaves flight
and after each processing batch commits) or a bisection was created or canceled, and once every
``interval`` seconds of the monotonic clock for what finished on other replicas.

Only the replica leading the sweeper moves bisections, so that two never start the same step's
job; another replica takes over with the leadership, from the rows alone."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from benchrunner.server.bisection import auto, rows
from benchrunner.server.bisection.advance import Moved, advance
from benchrunner.server.context import ServerContext
from benchrunner.server.store import alerts
from benchrunner.server.tasks import cancel_and_wait

log = logging.getLogger(__name__)


class BisectionDriver:
    def __init__(
        self,
        ctx: ServerContext,
        *,
        leads: Callable[[], bool],
        broadcast: Callable[[int], tuple[str, str] | None],
        job_created: Callable[[int], None],
        interval: float,
    ) -> None:
        """``broadcast`` and ``job_created``: the wake-ups' ``job_broadcast`` (for a new job's
        transaction) and ``job_created_here`` (after it commits)."""
        self._ctx = ctx
        self._leads = leads
        self._broadcast = broadcast
        self._job_created = job_created
        self._interval = interval
        self._woken = asyncio.Event()
        self._any_running = True
        """Whether the latest look found a running bisection (True until the first look): a
        job's end wakes the driver only then, so that a server without bisections spends no
        query on each job."""
        self._task: asyncio.Task[None] | None = None
        self.moves = 0
        """Moves made by this replica (a signal tests wait on)."""

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="bisections")

    async def stop(self) -> None:
        await cancel_and_wait(self._task)

    def wake(self) -> None:
        """A job left flight or a processing batch committed: look, if a bisection runs."""
        if self._any_running:
            self._woken.set()

    def changed(self) -> None:
        """A bisection was created or canceled here: look now."""
        self._any_running = True
        self._woken.set()

    async def _run(self) -> None:
        clock = self._ctx.monotonic
        while True:
            woken = asyncio.ensure_future(self._woken.wait())
            slept = asyncio.ensure_future(clock.sleep_until(clock.monotonic() + self._interval))
            try:
                await asyncio.wait({woken, slept}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for waiting in (woken, slept):
                    waiting.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await waiting
            self._woken.clear()
            try:
                await self.step()
            except Exception:
                log.exception("moving bisections failed; trying again")

    async def step(self) -> int:
        """A move of each running bisection if this replica leads: how many moved."""
        if not self._leads():
            return 0
        if await self._ctx.db.read(alerts.alerts_bisect_due, 1):
            await self._ctx.db.write(
                auto.start_pending,
                self._ctx.clock.now(),
                settings=self._ctx.settings,
                templates=self._ctx.templates,
            )
        running = await self._ctx.db.read(rows.bisections_running)
        self._any_running = bool(running)
        for bisection_id in running:
            try:
                moved: Moved = await self._ctx.db.write(
                    advance,
                    bisection_id,
                    self._ctx.clock.now(),
                    templates=self._ctx.templates,
                    registry_url=self._ctx.settings.base_url(),
                    broadcast=self._broadcast,
                )
            except Exception:
                log.exception("moving bisection %s failed; trying again", bisection_id)
                continue
            for spec_id in moved.spec_ids:
                self._job_created(spec_id)
            self.moves += 1
        return len(running)
