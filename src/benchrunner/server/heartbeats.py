"""Coalesced heartbeats: ``last_heartbeat`` is written at most once per write interval per
running job, and this process remembers what it heard in between.

A runner heartbeats about once a second; writing each one costs a database round trip and a
commit for nothing but a newer timestamp. So a running job's heartbeat is written when the stored
one is at least the write interval old, and answered from memory otherwise. Every rule stays
exact:

- **Heartbeat timeout, judged here.** The watchdog takes the newer of the stored
  ``last_heartbeat`` and the last heartbeat this process heard (``heard``), so a job whose runner
  keeps heartbeating is never failed because a write was skipped.
- **Heartbeat timeout, judged by another replica's sweeper.** The stored value is never more than
  the write interval older than the last heartbeat heard, and the interval is at most one sweep
  interval, which the sweeper already waits beyond the heartbeat timeout before it judges a job.
- **Hard timeout.** Checked on every heartbeat against the remembered ``started`` and
  ``timeout`` (which do not change while a job runs).
- **Cancel.** Every status change made by this process forgets the job (``forget``), so the next
  heartbeat is written and its ``RETURNING`` tells the new status. A cancel made through another
  replica is seen at the next write: the runner is told at most one write interval (plus one
  heartbeat) after the cancel.

Only ``running`` jobs are coalesced: a ``claimed`` job's heartbeats are written each time, so
startup recovery's orphan rule (claimed and silent) reads exact values.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from benchrunner.core.states import JobStatus
from benchrunner.server.config import ServerSettings
from benchrunner.server.store.transitions import Liveness


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


class HeartbeatLedger:
    """What this process heard from the runners of its running jobs since it last wrote."""

    def __init__(self, interval: dt.timedelta) -> None:
        self.interval = interval
        self._jobs: dict[int, _Heard] = {}
        self._writing: set[int] = set()
        """Jobs whose heartbeat is being written and that nothing has changed since."""

    def recent(self, job_id: int, now: dt.datetime) -> Liveness | None:
        """Record a heartbeat heard at ``now``. The job's remembered liveness if its stored
        ``last_heartbeat`` is younger than the interval (no write needed), else None: write it
        and call ``written``."""
        heard = self._jobs.get(job_id)
        if heard is None or now - heard.written >= self.interval or now < heard.written:
            self._writing.add(job_id)
            return None
        if now > heard.latest:
            heard.latest = now
        return heard.liveness

    def written(self, job_id: int, now: dt.datetime, liveness: Liveness) -> None:
        """The heartbeat at ``now`` was stored; ``liveness`` is what the write returned. Not
        remembered if the job was forgotten while the write was under way: the status the write
        returned may be older than the change that forgot it."""
        unchanged = job_id in self._writing
        self._writing.discard(job_id)
        if unchanged and liveness.status == JobStatus.RUNNING:
            self._jobs[job_id] = _Heard(now, now, liveness)
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

    def __len__(self) -> int:
        return len(self._jobs)
