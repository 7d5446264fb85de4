"""Coalesced heartbeats: a running job's heartbeat costs no query of its own; what this
process heard is written for every job together, at most once per write interval.

A runner heartbeats about once a second; writing each one costs a database round trip and a
commit for nothing but a newer timestamp. So what the job's ``running`` stored and returned
(its status and ``started``, with its ``timeout``; the move stores ``last_heartbeat`` as a
heartbeat's write does) is remembered here, and its heartbeats are answered from memory; a job
not remembered (a status changed since, a job claimed by a runner that skipped ``running``)
has its next heartbeat written, whose ``RETURNING`` is remembered the same way. One task per
server (``HeartbeatWriter``) stores the
newest heartbeat heard of each job and its runner, for all of them in one transaction, once
per write interval. Every rule stays exact:

- **Heartbeat timeout, judged here.** The watchdog takes the newer of the stored
  ``last_heartbeat`` and the last heartbeat this process heard (``heard``), so a job whose runner
  keeps heartbeating is never failed because a write is yet to come.
- **Heartbeat timeout, judged by another replica's sweeper.** The stored value is never more than
  the write interval (plus the time a write takes) older than the last heartbeat heard, and
  the interval is at most one sweep interval, which the sweeper already waits beyond the
  heartbeat timeout before it judges a job.
- **Hard timeout.** Checked on every heartbeat against the moment it passes, computed once from
  the remembered ``started`` and ``timeout`` (which do not change while a job runs).
- **Cancel.** Every status change made by this process forgets the job (``forget``), so the next
  heartbeat is written and its ``RETURNING`` tells the new status. A job the shared write finds
  no longer running (canceled through another replica) is forgotten too: the runner is told at
  most one write interval (plus one heartbeat) after the cancel.

Only ``running`` jobs are coalesced: a ``claimed`` job's heartbeats are written each time, so
startup recovery's orphan rule (claimed and silent) reads exact values.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
from dataclasses import dataclass

from benchrunner.core.states import JobStatus
from benchrunner.server.config import ServerSettings
from benchrunner.server.context import ServerContext
from benchrunner.server.store import transitions
from benchrunner.server.store.transitions import Beat, Liveness
from benchrunner.server.tasks import cancel_and_wait, repeat


def write_interval(settings: ServerSettings) -> dt.timedelta:
    """How long a stored ``last_heartbeat`` may lag the last heartbeat heard: at most one sweep
    interval (the sweeper's margin beyond the heartbeat timeout) and a quarter of the heartbeat
    timeout (what the API shows stays well within it)."""
    return dt.timedelta(seconds=min(settings.sweep_interval, settings.heartbeat_timeout / 4))


@dataclass
class _Heard:
    written: dt.datetime
    """The ``last_heartbeat`` stored by this process."""
    latest: dt.datetime
    """The newest heartbeat heard, written or not."""
    liveness: Liveness
    runner_id: int
    overdue_at: dt.datetime | None
    """When the job will have run past its hard timeout (and grace); None: not started."""


class HeartbeatLedger:
    """What this process heard from the runners of its running jobs since it last wrote."""

    def __init__(self, interval: dt.timedelta, grace: dt.timedelta = dt.timedelta(0)) -> None:
        self.interval = interval
        self.grace = grace
        """The job timeout grace: a job is overdue once it ran longer than its timeout and this."""
        self._jobs: dict[int, _Heard] = {}
        self._writing: set[int] = set()
        """Jobs whose heartbeat is being written and that nothing has changed since."""

    def beat(self, job_id: int, now: dt.datetime) -> bool | None:
        """Record a heartbeat heard at ``now``. Whether the job, remembered, ran past its hard
        timeout (the shared write stores the heartbeat); None if it is not remembered: write
        the heartbeat and call ``written``. A few comparisons, no allocation: this is every
        heartbeat's path."""
        if self.beat_remembered(job_id, now):
            return False
        if job_id in self._jobs:
            return True  # past its hard timeout: canceled now, the heartbeat moot
        self._writing.add(job_id)
        return None

    def beat_remembered(self, job_id: int, now: dt.datetime) -> bool:
        """Record a heartbeat heard at ``now`` if the job is remembered and, by ``now``, has not
        run past its hard timeout: True. False, nothing recorded: call ``beat``."""
        heard = self._jobs.get(job_id)
        if heard is None or (heard.overdue_at is not None and now > heard.overdue_at):
            return False
        if now > heard.latest:
            heard.latest = now
        return True

    def expect(self, job_id: int) -> None:
        """A write that stores the job's liveness is about to start (its ``running``): call
        ``written`` with what it returned."""
        self._jobs.pop(job_id, None)
        self._writing.add(job_id)

    def written(self, job_id: int, now: dt.datetime, liveness: Liveness, runner_id: int) -> None:
        """The heartbeat at ``now`` was stored; ``liveness`` is what the write returned. Not
        remembered if the job was forgotten while the write was under way: the status the write
        returned may be older than the change that forgot it."""
        unchanged = job_id in self._writing
        self._writing.discard(job_id)
        if unchanged and liveness.status == JobStatus.RUNNING:
            started = liveness.started
            overdue_at = (
                None
                if started is None
                else started + dt.timedelta(seconds=liveness.timeout) + self.grace
            )
            self._jobs[job_id] = _Heard(now, now, liveness, runner_id, overdue_at)
        else:
            self._jobs.pop(job_id, None)

    def heard(self, job_id: int) -> dt.datetime | None:
        """The newest heartbeat heard for the job, if this process remembers one."""
        heard = self._jobs.get(job_id)
        return None if heard is None else heard.latest

    def forget(self, job_id: int) -> None:
        """The job's status changed (or it left flight, or a write failed): its next heartbeat
        is written."""
        self._jobs.pop(job_id, None)
        self._writing.discard(job_id)

    def unwritten(self) -> list[Beat]:
        """The newest heartbeat of each job heard since its last write."""
        return [
            Beat(job_id, heard.runner_id, heard.latest)
            for job_id, heard in self._jobs.items()
            if heard.latest > heard.written
        ]

    def stored(self, beats: list[Beat], stopped: set[int]) -> None:
        """``beats`` were written; the jobs of ``stopped`` were found no longer running."""
        for beat in beats:
            heard = self._jobs.get(beat.job_id)
            if heard is None:
                continue
            if beat.job_id in stopped:
                self.forget(beat.job_id)
            elif beat.at > heard.written:
                heard.written = beat.at

    def __len__(self) -> int:
        return len(self._jobs)


class HeartbeatWriter:
    """One task per server: every write interval, the heartbeats heard since the last write
    are stored, every job's and runner's in one transaction."""

    def __init__(self, ctx: ServerContext, ledger: HeartbeatLedger) -> None:
        self.ctx = ctx
        self.ledger = ledger
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="heartbeat-writer")

    async def stop(self) -> None:
        await cancel_and_wait(self._task)
        self._task = None
        with contextlib.suppress(Exception):
            await self.write()

    async def _run(self) -> None:
        interval = self.ledger.interval.total_seconds()
        failed = "writing the heartbeats heard failed"
        await repeat(self.ctx.monotonic, interval, self.write, failed)

    async def write(self) -> None:
        beats = self.ledger.unwritten()
        if not beats:
            return
        stopped = await self.ctx.db.write(transitions.jobs_touch, beats)
        self.ledger.stored(beats, stopped)
