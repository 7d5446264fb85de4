"""Moves confirmations (``processing.confirmations``): queues a crossing's re-runs and decides
it once they have finished. It looks when a processing batch commits or a runner job is
processed after its ``ack`` (either may have opened a confirmation or finished a re-run), when a
job leaves flight while a confirmation is open (a re-run may have failed), and once every
``interval`` seconds of the monotonic clock for what other replicas did.

Only the replica leading the sweeper moves confirmations, so that two never queue the same
re-runs; every move is a guarded change of the confirmation's state besides."""

from __future__ import annotations

import logging
from collections.abc import Callable

from benchrunner.server.context import ServerContext
from benchrunner.server.processing.confirmations import Moved, advance
from benchrunner.server.processing.statistics_heap import statistics_ready
from benchrunner.server.store.confirmations import confirmations_open
from benchrunner.server.tasks import WokenLoop

log = logging.getLogger(__name__)


class ConfirmationDriver(WokenLoop):
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
        transaction) and ``job_created_here`` (after it commits). ``wake``: a job left flight;
        ``changed``: jobs were processed here (a confirmation may have opened)."""
        super().__init__(ctx.monotonic, interval, "confirmations")
        self._ctx = ctx
        self._leads = leads
        self._broadcast = broadcast
        self._job_created = job_created
        self.moves = 0
        """Confirmations moved by this replica (a signal tests may wait on)."""

    async def step(self) -> int:
        """A move of each open confirmation if this replica leads: how many are open."""
        if not self._leads():
            return 0
        found = await self._ctx.db.read(confirmations_open)
        self.busy = bool(found)
        if found:
            await statistics_ready()  # a decision may compare samples (SciPy)
        for confirmation_id in found:
            try:
                moved: Moved = await self._ctx.db.write(
                    advance, confirmation_id, self._ctx.clock.now(), broadcast=self._broadcast
                )
            except Exception:
                log.exception("moving confirmation %s failed; trying again", confirmation_id)
                continue
            for spec_id in moved.spec_ids:
                self._job_created(spec_id)
            if moved.spec_ids or moved.decided:
                self.moves += 1
        return len(found)
