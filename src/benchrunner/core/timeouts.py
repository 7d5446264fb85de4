"""Timeout decisions shared by the channel, disconnect tasks and startup recovery
(docs/decisions/timeouts-recovery.md)."""

from __future__ import annotations

import datetime as dt
import enum

from benchrunner.core.states import JobStatus


class TimeoutVerdict(enum.Enum):
    ALIVE = "alive"
    LOST_CONTACT = "heartbeat_timeout"  # -> failed
    RAN_TOO_LONG = "job_timeout_exceeded"  # -> canceled


def hard_timeout_exceeded(
    started: dt.datetime | None,
    timeout_seconds: int,
    grace: dt.timedelta,
    now: dt.datetime,
) -> bool:
    """``now - started > timeout + grace``; a job that never started cannot exceed it."""
    if started is None:
        return False
    return now - started > dt.timedelta(seconds=timeout_seconds) + grace


def judge_silent_job(
    *,
    status: JobStatus,
    started: dt.datetime | None,
    last_heartbeat: dt.datetime | None,
    timeout_seconds: int,
    heartbeat_timeout: dt.timedelta,
    grace: dt.timedelta,
    now: dt.datetime,
) -> tuple[TimeoutVerdict, dt.timedelta]:
    """What to do with an in-flight job whose runner has gone quiet.

    Returns the verdict and, for ``ALIVE``, how long until it should be judged again.
    """
    if hard_timeout_exceeded(started, timeout_seconds, grace, now):
        return TimeoutVerdict.RAN_TOO_LONG, dt.timedelta(0)
    if last_heartbeat is not None:
        quiet_for = now - last_heartbeat
        if quiet_for < heartbeat_timeout:
            return TimeoutVerdict.ALIVE, heartbeat_timeout - quiet_for
    del status
    return TimeoutVerdict.LOST_CONTACT, dt.timedelta(0)
