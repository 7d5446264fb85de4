"""Heartbeat and hard timeouts on the channel, with the server's clock driven by the test.

The heartbeat timeout is 300 s and the grace 60 s: nothing here times out by waiting. Each test
moves the server's clock (wall and monotonic together) past the limit and sees the channel act.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from benchrunner.api.jobs import Job
from tests.harness import wait_until
from tests.inprocess import InProcessServer, serve_in_process

HEARTBEAT_TIMEOUT = 300.0
GRACE = 60.0


@pytest.fixture
def server(tmp_path: Path, database_url: str) -> Iterator[InProcessServer]:
    with serve_in_process(
        tmp_path, database_url, heartbeat_timeout=HEARTBEAT_TIMEOUT, job_timeout_grace=GRACE
    ) as running:
        yield running


def _reasons(job: Job) -> list[str]:
    return [str(e.message) for e in job.events or []]


def test_silent_runner_fails_its_job_and_the_channel_closes(server: InProcessServer) -> None:
    channel = server.channel("silent")
    job_uuid = server.submit()
    channel.claim()
    assert channel.ask({"event": "running"})["event"] == "ack"
    server.clock.advance(HEARTBEAT_TIMEOUT - 1)
    assert channel.ask({"event": "heartbeat"}) == {"event": "ack", "job": job_uuid}
    server.clock.advance(HEARTBEAT_TIMEOUT - 1)  # quiet, but never for the whole timeout
    assert server.job(job_uuid).status == "running"
    server.clock.advance(2)
    code, reason = channel.wait_closed(timeout=15)
    assert (code, reason) == (1000, '"heartbeat_timeout"')  # as Bencher's server closes
    job = server.job(job_uuid)
    assert job.status == "failed"
    assert any("heartbeat_timeout" in r for r in _reasons(job))


def test_invalid_messages_do_not_keep_a_job_alive(server: InProcessServer) -> None:
    channel = server.channel("chatty")
    job_uuid = server.submit()
    channel.claim()
    channel.ask({"event": "running"})
    for _ in range(4):
        server.clock.advance(HEARTBEAT_TIMEOUT / 5)
        assert channel.ask('{"event": "heartbeat", "oops"')["event"] == "error"
    # the last fifth: an invalid message now could race the close, so none is sent
    server.clock.advance(HEARTBEAT_TIMEOUT / 5)
    assert channel.wait_closed(timeout=15) == (1000, '"heartbeat_timeout"')
    assert server.job(job_uuid).status == "failed"


def test_hard_timeout_cancels_a_job_that_keeps_heartbeating(server: InProcessServer) -> None:
    channel = server.channel("forever")
    job_uuid = server.submit(timeout=1)
    channel.claim()
    channel.ask({"event": "running"})
    assert channel.ask({"event": "heartbeat"}) == {"event": "ack", "job": job_uuid}
    server.clock.advance(1 + GRACE - 1)  # within timeout plus grace
    assert channel.ask({"event": "heartbeat"}) == {"event": "ack", "job": job_uuid}
    server.clock.advance(2)
    assert channel.ask({"event": "heartbeat"}) == {"event": "cancel", "job": job_uuid}
    job = server.job(job_uuid)
    assert job.status == "canceled"
    assert any("job_timeout_exceeded" in r for r in _reasons(job))
    assert channel.ask({"event": "canceled", "job": job_uuid})["event"] == "ack"


def test_no_deadline_while_a_ready_is_outstanding(server: InProcessServer) -> None:
    channel = server.channel("patient")
    channel.send({"event": "ready", "poll_timeout": 5})
    server.clock.advance(HEARTBEAT_TIMEOUT * 3)
    job_uuid = server.submit()
    assert channel.recv(timeout=15)["uuid"] == job_uuid
    wait_until(lambda: server.job(job_uuid).status == "claimed", message="claimed")
