"""Coalesced heartbeats: a running job's heartbeats cost no query, its first included (its
``running`` stored what a heartbeat's write would); the newest heard is stored for all jobs
together once per write interval, and nothing that depends on heartbeats notices the skipped
writes.

The server's clock is the test's (heartbeat timeout 300 s, sweeper off): the write interval is a
quarter of the timeout, 75 s. What is stored is read back through the API's ``last_heartbeat``.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchrunner.core.states import JobStatus
from benchrunner.server.moves.move import Move, apply
from benchrunner.server.store import jobs
from benchrunner.server.store.engine import Database
from tests.harness import wait_until
from tests.inprocess import InProcessChannel, InProcessServer, serve_in_process

HEARTBEAT_TIMEOUT = 300.0
WRITE_INTERVAL = HEARTBEAT_TIMEOUT / 4


@pytest.fixture
def server(tmp_path: Path, database_url: str) -> Iterator[InProcessServer]:
    with serve_in_process(tmp_path, database_url, heartbeat_timeout=HEARTBEAT_TIMEOUT) as running:
        yield running


def _stored_heartbeat(server: InProcessServer, job_uuid: str) -> dt.datetime:
    return dt.datetime.fromisoformat(str(server.job(job_uuid).last_heartbeat))


def _running_job(server: InProcessServer, channel: InProcessChannel) -> str:
    job_uuid = server.submit()
    channel.claim()
    assert channel.ask({"event": "running"})["event"] == "ack"
    assert channel.ask({"event": "heartbeat"}) == {"event": "ack", "job": job_uuid}
    return job_uuid


def test_the_newest_heartbeat_heard_is_stored_once_per_write_interval(
    server: InProcessServer,
) -> None:
    channel = server.channel("steady")
    job_uuid = _running_job(server, channel)  # ``running`` stored its first heartbeat's time
    first = _stored_heartbeat(server, job_uuid)
    for _ in range(7):  # 70 s of heartbeats, all within the interval
        server.clock.advance(10)
        assert channel.ask({"event": "heartbeat"}) == {"event": "ack", "job": job_uuid}
        assert _stored_heartbeat(server, job_uuid) == first
    server.clock.advance(WRITE_INTERVAL - 70)  # the shared write's turn
    wait_until(
        lambda: _stored_heartbeat(server, job_uuid) == first + dt.timedelta(seconds=70),
        message="the newest heartbeat heard stored",
    )
    assert channel.ask({"event": "heartbeat"}) == {"event": "ack", "job": job_uuid}
    server.clock.advance(WRITE_INTERVAL)
    wait_until(
        lambda: _stored_heartbeat(server, job_uuid) == first + dt.timedelta(seconds=75),
        message="the next one stored",
    )
    with server.admin() as client:
        seen = client.get_runner("steady").last_seen_at
    assert dt.datetime.fromisoformat(str(seen)) == first + dt.timedelta(seconds=75)


def test_a_jobs_first_heartbeat_is_answered_from_what_its_running_stored(
    server: InProcessServer,
) -> None:
    channel = server.channel("first")
    job_uuid = server.submit()
    channel.claim()
    assert channel.ask({"event": "running"})["event"] == "ack"
    started = _stored_heartbeat(server, job_uuid)
    server.clock.advance(10)
    assert channel.ask({"event": "heartbeat"}) == {"event": "ack", "job": job_uuid}
    assert _stored_heartbeat(server, job_uuid) == started  # no write of its own
    server.clock.advance(WRITE_INTERVAL)
    wait_until(
        lambda: _stored_heartbeat(server, job_uuid) == started + dt.timedelta(seconds=10),
        message="the first heartbeat stored by the shared write",
    )


def test_a_cancel_between_running_and_the_first_heartbeat_is_told_on_it(
    server: InProcessServer,
) -> None:
    channel = server.channel("early")
    job_uuid = server.submit()
    channel.claim()
    assert channel.ask({"event": "running"})["event"] == "ack"
    with server.admin() as client:
        client.cancel_job("bench", job_uuid)
    assert channel.ask({"event": "heartbeat"}) == {"event": "cancel", "job": job_uuid}


def test_a_cancel_made_elsewhere_reaches_the_runner_after_the_shared_write(
    server: InProcessServer,
) -> None:
    """Another replica's cancel changes the database only: this server learns it when it next
    stores the heartbeats it heard, and tells the runner on the heartbeat after that."""
    channel = server.channel("told")
    job_uuid = _running_job(server, channel)
    ctx = server.state("ctx")
    elsewhere = Database(ctx.db.url)  # another replica's connections
    try:
        job = elsewhere.read_sync(jobs.job_get_by_uuid, uuid.UUID(job_uuid))
        assert job is not None
        canceled = Move(
            job, JobStatus.CANCELED, ctx.clock.now(), "canceled", requested_by="elsewhere"
        )
        assert elsewhere.write_sync(apply, canceled)
    finally:
        elsewhere.close()
    server.clock.advance(10)
    assert channel.ask({"event": "heartbeat"}) == {"event": "ack", "job": job_uuid}  # not known
    lifecycle = server.state("lifecycle")
    server.clock.advance(WRITE_INTERVAL)
    wait_until(lambda: len(lifecycle.heartbeats) == 0, message="the job found canceled")
    assert channel.ask({"event": "heartbeat"}) == {"event": "cancel", "job": job_uuid}


def test_a_cancel_reaches_the_runner_on_its_next_heartbeat(server: InProcessServer) -> None:
    channel = server.channel("canceled")
    job_uuid = _running_job(server, channel)
    server.clock.advance(5)
    assert channel.ask({"event": "heartbeat"}) == {"event": "ack", "job": job_uuid}
    with server.admin() as client:
        client.cancel_job("bench", job_uuid)
    assert channel.ask({"event": "heartbeat"}) == {"event": "cancel", "job": job_uuid}
    assert channel.ask({"event": "canceled", "job": job_uuid})["event"] == "ack"
    assert server.job(job_uuid).status == "canceled"


def test_a_heartbeat_heard_but_not_written_keeps_the_job_alive(
    server: InProcessServer, tmp_path: Path
) -> None:
    """The runner reconnects: the first channel's disconnect timer stays armed and fires a
    heartbeat timeout after the last *stored* heartbeat. The runner heartbeated since, on the new
    channel, within the write interval: the timer must judge from what was heard."""
    with server.admin() as client:
        created = client.create_runner("reconnecting", ["small"])
    first = InProcessChannel(f"ws://127.0.0.1:{server.port}", created.slug, created.token)
    job_uuid = _running_job(server, first)
    lifecycle = server.state("lifecycle")
    first.close()
    wait_until(lambda: len(lifecycle.watchdog._timers) == 1, message="disconnect timer armed")
    [timer] = lifecycle.watchdog._timers.values()
    second = InProcessChannel(f"ws://127.0.0.1:{server.port}", created.slug, created.token)
    server.clock.advance(WRITE_INTERVAL - 1)
    assert second.ask({"event": "heartbeat"}) == {"event": "ack", "job": job_uuid}
    server.clock.advance(HEARTBEAT_TIMEOUT - WRITE_INTERVAL + 2)  # stored one is 301 s old
    wait_until(timer.done, message="the disconnect timer judged the job")
    assert server.job(job_uuid).status == "running"
    assert second.ask({"event": "heartbeat"}) == {"event": "ack", "job": job_uuid}
    second.close()


_IDLE_READY = {"event": "ready", "poll_timeout": 1}


def _last_seen(server: InProcessServer, runner: str) -> dt.datetime:
    with server.admin() as client:
        return dt.datetime.fromisoformat(str(client.get_runner(runner).last_seen_at))


def test_an_idle_runners_last_seen_follows_its_messages(server: InProcessServer) -> None:
    """Between jobs a runner sends ``ready`` (and heartbeats): its "last seen" must not stay at
    the time it connected. Written once per write interval, as a job's heartbeats are."""
    channel = server.channel("idle")
    assert channel.ask(_IDLE_READY, timeout=10) == {"event": "no_job"}
    connected = _last_seen(server, "idle")
    server.clock.advance(WRITE_INTERVAL / 2)
    assert channel.ask({"event": "heartbeat"}) == {"event": "ack"}
    assert _last_seen(server, "idle") == connected  # within the interval: not written
    server.clock.advance(WRITE_INTERVAL / 2)
    assert channel.ask({"event": "heartbeat"}) == {"event": "ack"}
    assert _last_seen(server, "idle") == connected + dt.timedelta(seconds=WRITE_INTERVAL)
    server.clock.advance(WRITE_INTERVAL)
    assert channel.ask(_IDLE_READY, timeout=10) == {"event": "no_job"}
    assert _last_seen(server, "idle") == connected + dt.timedelta(seconds=2 * WRITE_INTERVAL)
