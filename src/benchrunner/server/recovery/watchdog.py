"""Heartbeat and hard timeouts away from a live connection, and startup recovery
(docs/decisions/timeouts-recovery.md).

A job whose connection dropped gets a timer; when it fires, the job is judged from the
database (and from heartbeats this process heard but has not written yet, see ``heartbeats``):
still fresh (the runner reconnected) -> timer re-armed; ran too long -> canceled;
otherwise -> failed. Startup fails orphaned claimed jobs, arms timers for the rest of the
in-flight jobs, and re-processes completed ones.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Callable

from benchrunner.core.events import SYSTEM_ACTOR, JobEvent
from benchrunner.core.states import JobStatus
from benchrunner.core.timeouts import TimeoutVerdict, judge_silent_job
from benchrunner.server.channel.heartbeats import HeartbeatLedger
from benchrunner.server.context import ServerContext
from benchrunner.server.logs.transition_log import Timeout
from benchrunner.server.moves.move import Move, Moves
from benchrunner.server.store import jobs

log = logging.getLogger(__name__)

SYSTEM = SYSTEM_ACTOR


class Watchdog:
    def __init__(
        self,
        ctx: ServerContext,
        *,
        moves: Moves,
        on_completed: Callable[[int], None],
        heartbeats: HeartbeatLedger | None = None,
    ) -> None:
        self._ctx = ctx
        self._heartbeats = heartbeats
        self._moves = moves
        self._on_completed = on_completed
        self._timers: dict[int, asyncio.Task[None]] = {}

    def watch(self, job_id: int, delay: float | None = None) -> None:
        """Arm the timer of an in-flight job. An armed timer is never pushed back: a runner
        that keeps reconnecting without heartbeating must not keep its job alive."""
        current = self._timers.get(job_id)
        if current is not None and not current.done():
            return
        wait = self._ctx.settings.heartbeat_timeout if delay is None else delay
        self._timers[job_id] = asyncio.create_task(
            self._fire(job_id, wait), name=f"timeout-{job_id}"
        )

    def forget(self, job_id: int) -> None:
        timer = self._timers.pop(job_id, None)
        if timer is not None and timer is not asyncio.current_task():
            timer.cancel()

    def stop(self) -> None:
        for job_id in list(self._timers):
            self.forget(job_id)

    async def _fire(self, job_id: int, delay: float) -> None:
        clock = self._ctx.monotonic
        await clock.sleep_until(clock.monotonic() + delay)
        self._timers.pop(job_id, None)
        try:
            await self.judge(job_id)
        except Exception:
            log.exception("timeout check of job %s failed; re-arming", job_id)
            self.watch(job_id)

    async def judge(self, job_id: int, *, reason_prefix: str = "") -> TimeoutVerdict | None:
        """Decide an in-flight job's fate from the database; None if it is not in flight."""
        job = await self._ctx.db.read(jobs.job_get, job_id)
        if job is None or job.status not in (JobStatus.CLAIMED, JobStatus.RUNNING):
            if self._heartbeats is not None:
                self._heartbeats.forget(job_id)
            return None
        now = self._ctx.clock.now()
        verdict, remaining = judge_silent_job(
            status=job.status,
            started=job.started,
            last_heartbeat=self._last_heartbeat(job),
            timeout_seconds=job.timeout,
            heartbeat_timeout=self._ctx.heartbeat_timeout,
            grace=self._ctx.job_timeout_grace,
            now=now,
        )
        if verdict is TimeoutVerdict.ALIVE:
            self.watch(job_id, remaining.total_seconds())
            return verdict
        await self.enforce(job, verdict, reason_prefix)
        return verdict

    def _last_heartbeat(self, job: jobs.JobRow) -> dt.datetime | None:
        """The stored ``last_heartbeat``, or a newer one this process heard and has not
        written yet (heartbeats are coalesced)."""
        heard = None if self._heartbeats is None else self._heartbeats.heard(job.id)
        if heard is None or (job.last_heartbeat is not None and job.last_heartbeat >= heard):
            return job.last_heartbeat
        return heard

    async def enforce(self, job: jobs.JobRow, verdict: TimeoutVerdict, prefix: str = "") -> bool:
        now = self._ctx.clock.now()
        if verdict is TimeoutVerdict.RAN_TOO_LONG:
            reason = f"{prefix}job_timeout_exceeded: ran longer than {job.timeout} s plus grace"
            to, event, timeout = JobStatus.CANCELED, JobEvent.TIMEOUT, Timeout.JOB
        else:
            reason = f"{prefix}heartbeat_timeout: no heartbeat for {self._ctx.heartbeat_timeout}"
            to, event = JobStatus.FAILED, JobEvent.HEARTBEAT_STALE_RECOVERED
            timeout = Timeout.HEARTBEAT
        return await self._moves.move(
            Move(job, to, now, reason, event=event, reason=reason, timeout=timeout)
        )

    async def recover_at_startup(self) -> None:
        cutoff = self._ctx.clock.now() - self._ctx.heartbeat_timeout
        orphans = await self._ctx.db.read(jobs.jobs_orphaned_claimed, cutoff)
        reason = "orphaned: claimed before the server restarted and never started"
        event = JobEvent.RECOVERED_AFTER_CRASH
        for job in orphans:
            now = self._ctx.clock.now()
            await self._moves.move(
                Move(job, JobStatus.FAILED, now, reason, event=event, reason=reason)
            )
        in_flight = await self._ctx.db.read(
            jobs.job_list_by_status, [JobStatus.CLAIMED, JobStatus.RUNNING]
        )
        for job in in_flight:
            self.watch(job.id)
        completed = await self._ctx.db.read(jobs.job_list_by_status, [JobStatus.COMPLETED])
        for job in completed:
            self._on_completed(job.id)
        log.info(
            "startup recovery: %d orphaned claimed jobs failed, %d in flight watched, "
            "%d completed re-queued for processing",
            len(orphans),
            len(in_flight),
            len(completed),
        )
