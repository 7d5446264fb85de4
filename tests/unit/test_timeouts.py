from __future__ import annotations

import datetime as dt

import pytest

from benchrunner.core.states import JobStatus
from benchrunner.core.timeouts import TimeoutVerdict, hard_timeout_exceeded, judge_silent_job

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
S = dt.timedelta(seconds=1)


def test_hard_timeout_is_timeout_plus_grace() -> None:
    assert not hard_timeout_exceeded(T0, 10, 5 * S, T0 + 15 * S)
    assert hard_timeout_exceeded(T0, 10, 5 * S, T0 + 16 * S)
    assert not hard_timeout_exceeded(None, 10, 5 * S, T0 + 1000 * S)


@pytest.mark.parametrize(
    ("started", "last_heartbeat", "now", "verdict", "remaining"),
    [
        (T0, T0 + 8 * S, T0 + 10 * S, TimeoutVerdict.ALIVE, 3 * S),
        (T0, T0 + 5 * S, T0 + 10 * S, TimeoutVerdict.LOST_CONTACT, 0 * S),
        (None, None, T0, TimeoutVerdict.LOST_CONTACT, 0 * S),
        (T0, T0 + 99 * S, T0 + 100 * S, TimeoutVerdict.RAN_TOO_LONG, 0 * S),
    ],
)
def test_a_silent_job_is_judged_like_seed_000(
    started: dt.datetime | None,
    last_heartbeat: dt.datetime | None,
    now: dt.datetime,
    verdict: TimeoutVerdict,
    remaining: dt.timedelta,
) -> None:
    assert judge_silent_job(
        status=JobStatus.RUNNING,
        started=started,
        last_heartbeat=last_heartbeat,
        timeout_seconds=60,
        heartbeat_timeout=5 * S,
        grace=30 * S,
        now=now,
    ) == (verdict, remaining)
