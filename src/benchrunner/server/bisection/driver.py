"""Starts the bisections that bisect thresholds' alerts asked for (``auto``), and runs
bisections forward: a move (``advance``) of every running bisection each time a job
may have finished on this replica (``wake``: the lifecycle calls it when a job leaves flight
and after each processing batch commits) or a bisection was created or canceled, and once every
``interval`` seconds of the monotonic clock for what finished on other replicas.

Only the replica leading the sweeper moves bisections, so that two never start the same step's
job; another replica takes over with the leadership, from the rows alone."""

from __future__ import annotations

import logging
from collections.abc import Callable

from sqlalchemy.engine import Connection

from benchrunner.server.bisection import auto, rows
from benchrunner.server.bisection.advance import Moved, advance
from benchrunner.server.context import ServerContext
from benchrunner.server.store import alerts
from benchrunner.server.tasks import WokenLoop

log = logging.getLogger(__name__)


def _looked(conn: Connection) -> tuple[bool, list[int]]:
    """In one read (most looks find nothing): whether an alert's bisection is pending, and the
    running bisections."""
    return bool(alerts.alerts_bisect_due(conn, 1)), rows.bisections_running(conn)


class BisectionDriver(WokenLoop):
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
        transaction) and ``job_created_here`` (after it commits). ``wake``: a job left flight
        or a processing batch committed; ``changed``: a bisection was created or canceled
        here."""
        super().__init__(ctx.monotonic, interval, "bisections")
        self._ctx = ctx
        self._leads = leads
        self._broadcast = broadcast
        self._job_created = job_created
        self.moves = 0
        """Moves made by this replica (a signal tests wait on)."""

    async def step(self) -> int:
        """A move of each running bisection if this replica leads: how many moved."""
        if not self._leads():
            return 0
        due, running = await self._ctx.db.read(_looked)
        if due:
            await self._ctx.db.write(
                auto.start_pending,
                self._ctx.clock.now(),
                settings=self._ctx.settings,
                templates=self._ctx.templates,
            )
            running = await self._ctx.db.read(rows.bisections_running)
        self.busy = bool(running)
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
