"""The sweeper (docs/decisions/timeouts-recovery.md): in-flight jobs whose heartbeats stopped,
whatever replica held their connection.

Each replica's own timers end the jobs of connections it saw drop. A replica that dies takes
those timers with it; the sweeper, run by one leader among the replicas, finds such jobs from
``last_heartbeat`` alone and lets the watchdog judge them (failed, or canceled past the hard
timeout). It waits one sweep interval beyond the heartbeat timeout so that a live replica's own
timer, which also closes the channel with the reason, acts first. And it sweeps only after
leading for a whole heartbeat timeout: when every server was down (a restart), runners need that
long to reconnect and heartbeat again before their silence counts.

It also deletes the idempotency keys of submissions older than the idempotency window, at
most once every tenth of that window (``KEY_EXPIRY_SHARE``): a key past its window is replaced
by the next submission that names it whether it was deleted or not, so the deletion only keeps
the table small and need not cost a write at every sweep. And it re-queues for processing the
jobs left ``completed`` for longer than the heartbeat timeout: their results were stored, but
the replica that took them died before its processor got to them (or before their report's
judgment moved them, their metrics stored: those are judged, not stored again, by
``processing.processor.record_processed``; each write storing a judged job's metrics touches it,
``store.jobs.job_hold_completed``, so a job whose metrics were stored lately is not re-queued;
its verdicts' writes do not, and a second judgment writes nothing twice). Processing is a
guarded transition, so a job re-queued twice is processed once; it ends every job it reads
``processed`` (with the error on the report when its output is unusable) but one whose metrics
failed to be stored, which it tries again at every sweep rather than lose them. So it hands the
processor the direct runs' reports left awaiting their judgment as long
(``store.pending_judgments``): stored, but not judged before their server stopped.

Time since taking the lead is measured on the context's monotonic clock, so tests can move it.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Callable

from sqlalchemy.engine import Connection

from benchrunner.core.timeouts import TimeoutVerdict
from benchrunner.server.context import ServerContext
from benchrunner.server.recovery.leadership import Leadership
from benchrunner.server.recovery.watchdog import Watchdog
from benchrunner.server.store import jobs, pending_judgments
from benchrunner.server.store.idempotency import keys_expire
from benchrunner.server.tasks import cancel_and_wait

log = logging.getLogger(__name__)

UNPROCESSED_BATCH = 500
KEY_EXPIRY_SHARE = 0.1
"""The share of the idempotency window between two deletions of expired keys."""


def _left_behind(conn: Connection, cutoff: dt.datetime) -> tuple[list[int], list[int], list[int]]:
    """In one read: the in-flight jobs silent since ``cutoff``, the jobs left ``completed``
    and unprocessed since then, and the direct runs' reports awaiting their judgment since
    then (at most ``UNPROCESSED_BATCH`` of each)."""
    return (
        jobs.jobs_silent_in_flight(conn, cutoff),
        jobs.jobs_completed_unprocessed(conn, cutoff, UNPROCESSED_BATCH),
        pending_judgments.reports_awaiting(conn, cutoff, UNPROCESSED_BATCH),
    )


class Sweeper:
    def __init__(
        self,
        ctx: ServerContext,
        watchdog: Watchdog,
        leadership: Leadership,
        interval: float,
        *,
        on_completed: Callable[[int], None],
        on_awaiting_judgment: Callable[[int], None],
    ) -> None:
        self._ctx = ctx
        self._on_completed = on_completed
        self._on_awaiting_judgment = on_awaiting_judgment
        self._watchdog = watchdog
        self._leadership = leadership
        self._interval = interval
        self._task: asyncio.Task[None] | None = None
        self._leading_since: float | None = None
        self._keys_expired_at: float | None = None
        self._stopping = False

    @property
    def leader(self) -> bool:
        return self._leadership.leader

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="sweeper")

    async def stop(self) -> None:
        self._stopping = True  # the loop ends even if a cancel is lost inside a library call
        await cancel_and_wait(self._task)
        await self._leadership.release()

    async def _run(self) -> None:
        while not self._stopping:
            try:
                await self.step()
            except Exception:
                log.exception("sweep failed; trying again next interval")
            clock = self._ctx.monotonic
            await clock.sleep_until(clock.monotonic() + self._interval)

    async def step(self) -> bool:
        """One interval's work: keep or take the lead, and sweep once this replica has led for
        a whole heartbeat timeout. Whether it swept."""
        if not await self._leadership.hold():
            self._leading_since = None
            return False
        now = self._ctx.monotonic.monotonic()
        if self._leading_since is None:
            self._leading_since = now
        if now - self._leading_since < self._ctx.settings.heartbeat_timeout:
            return False
        await self.sweep()
        return True

    async def sweep(self) -> None:
        """Judge every in-flight job silent for longer than the heartbeat timeout plus one
        interval, re-queue the completed jobs left unprocessed as long, and queue the direct
        runs' reports left unjudged as long."""
        cutoff = (
            self._ctx.clock.now()
            - self._ctx.heartbeat_timeout
            - dt.timedelta(seconds=self._interval)
        )
        stale, unprocessed, unjudged = await self._ctx.db.read(_left_behind, cutoff)
        ended = 0
        for job_id in stale:
            verdict = await self._watchdog.judge(job_id)
            if verdict not in (None, TimeoutVerdict.ALIVE):
                ended += 1
        if ended:
            log.info("sweeper ended %d in-flight jobs whose heartbeats stopped", ended)
        for job_id in unprocessed:
            self._on_completed(job_id)
        if unprocessed:
            log.info("sweeper re-queued %d completed jobs for processing", len(unprocessed))
        for report_id in unjudged:
            self._on_awaiting_judgment(report_id)
        if unjudged:
            log.info("sweeper queued %d direct runs' reports for their judgment", len(unjudged))
        await self._expire_idempotency_keys()

    async def _expire_idempotency_keys(self) -> None:
        now = self._ctx.monotonic.monotonic()
        period = self._ctx.settings.idempotency_window * KEY_EXPIRY_SHARE
        if self._keys_expired_at is not None and now - self._keys_expired_at < period:
            return
        window = dt.timedelta(seconds=self._ctx.settings.idempotency_window)
        expired = await self._ctx.db.write(keys_expire, self._ctx.clock.now() - window)
        self._keys_expired_at = now  # set after the deletion: a failed one is tried again
        if expired:
            log.info("sweeper deleted %d expired idempotency keys", expired)
