"""What the server keeps in memory per runner and per connection stays bounded: it is dropped
when a channel ends, and does not grow with the number of jobs a runner runs."""

from __future__ import annotations

import asyncio
import threading
import uuid
from pathlib import Path

import sqlalchemy as sa

from benchrunner.core.states import JobStatus
from benchrunner.server.channel.lifecycle import Lifecycle
from benchrunner.server.channel.runner_channel import ChannelHub
from benchrunner.server.scheduling.dispatcher import ClaimFn, Dispatcher
from benchrunner.server.store.claims import Claim
from benchrunner.server.store.engine import make_engine
from benchrunner.server.store.tables import job
from tests.harness import wait_until
from tests.inprocess import InProcessChannel, InProcessServer, serve_in_process

RUNNERS = 20
JOBS = 30


def _sizes(life: Lifecycle, hub: ChannelHub) -> dict[str, int]:
    return {
        "channels": len(hub.sessions),
        "newest channels": len(hub._newest),
        "spec cache": len(life._spec_cache),
        "waiting claims": life.dispatcher.waiting,
        "timers": len(life.watchdog._timers),
        "undelivered": len(life._undelivered),
    }


def _wait_dropped(life: Lifecycle, hub: ChannelHub) -> None:
    """Wait until nothing is kept per runner; on a timeout, say what still is."""
    try:
        wait_until(
            lambda: set(_sizes(life, hub).values()) == {0}, message="the per-runner state dropped"
        )
    except AssertionError as timed_out:
        raise AssertionError(f"{timed_out}; still {_sizes(life, hub)}") from None


def test_per_runner_state_is_dropped_when_channels_end(tmp_path: Path, database_url: str) -> None:
    with serve_in_process(tmp_path, database_url, heartbeat_timeout=300.0) as server:
        life, hub = server.state("lifecycle"), server.state("hub")
        for i in range(RUNNERS):
            channel = server.channel(f"passing-{i}")
            job_uuid = server.submit()
            assert channel.claim()["uuid"] == job_uuid
            assert _sizes(life, hub)["spec cache"] == 1
            channel.ask({"event": "running"})
            channel.ask({"event": "completed", "job": job_uuid, "results": []})
            channel.close()
            wait_until(lambda: not hub.sessions, message="the channel's session ended")
        # A job is processed after its ack, beside the channel: its state goes once that ends.
        _wait_dropped(life, hub)


def test_per_runner_state_does_not_grow_with_jobs(tmp_path: Path, database_url: str) -> None:
    with serve_in_process(tmp_path, database_url, heartbeat_timeout=300.0) as server:
        life, hub = server.state("lifecycle"), server.state("hub")
        channel = server.channel("busy")
        for _ in range(JOBS):
            job_uuid = server.submit()
            assert channel.claim()["uuid"] == job_uuid
            channel.ask({"event": "running"})
            channel.ask({"event": "heartbeat"})
            assert channel.ask({"event": "completed", "job": job_uuid, "results": []}) == {
                "event": "ack",
                "job": job_uuid,
            }
            sizes = _sizes(life, hub)
            assert sizes["spec cache"] <= 1 and sizes["timers"] == 0, sizes
            assert sizes["channels"] == sizes["newest channels"] == 1, sizes
        channel.close()
        wait_until(lambda: not hub.sessions, message="the channel's session ended")
        # The last job is processed after its ack, beside the channel: its task ends after.
        _wait_dropped(life, hub)


def _gate_claims(
    server: InProcessServer,
) -> tuple[Dispatcher, ClaimFn, threading.Event, threading.Event]:
    """Hold the server's claims: ``entered`` is set when one starts, which commits only once
    ``release`` is set. Returns the dispatcher and its own claim, to put back."""
    dispatcher: Dispatcher = server.state("lifecycle").dispatcher
    claim = dispatcher._claim
    entered, release = threading.Event(), threading.Event()

    async def gated(runner_id: int, slug: str, nonce: str, templates: bool) -> Claim | None:
        entered.set()
        await asyncio.to_thread(release.wait, 30)
        return await claim(runner_id, slug, nonce, templates)

    dispatcher._claim = gated
    return dispatcher, claim, entered, release


def test_a_claim_landing_for_a_superseded_channel_returns_to_the_queue(
    tmp_path: Path, database_url: str
) -> None:
    """The claim is in the database while the runner reconnects: the job must neither reach
    the old channel nor sit ``claimed`` until the (300 s) heartbeat timeout. No runner got it,
    so it is pending again at once, and the new channel's ``ready`` takes it."""
    with serve_in_process(tmp_path, database_url, heartbeat_timeout=300.0) as server:
        dispatcher, claim, entered, release = _gate_claims(server)
        with server.admin() as client:
            created = client.create_runner("reconnecting", ["small"])
        ws_url = f"ws://127.0.0.1:{server.port}"
        old = InProcessChannel(ws_url, created.slug, created.token)
        old.send({"event": "ready", "poll_timeout": 900})
        job_uuid = server.submit()
        assert entered.wait(10), "the claim never started"
        new = InProcessChannel(ws_url, created.slug, created.token)
        assert old.wait_closed(timeout=10) == (4001, "superseded")
        release.set()
        # Pending from its creation until the released claim commits: back once returned. The
        # job's row and its events are two reads, so one answer may show the row before the
        # return and the events after it: wait for both.
        job = wait_until(
            lambda: (
                (j := server.job(job_uuid)).events[-1].event_type == "job_returned"
                and j.status == "pending"
                and j
            ),
            timeout=15,
            message="the undelivered job back in the queue",
        )
        events = [(e.event_type, e.status) for e in job.events]
        assert events == [
            ("job_created", "pending"),
            ("job_claimed", "claimed"),
            ("job_returned", "pending"),
        ]
        assert "undelivered" in str(job.events[-1].message)
        dispatcher._claim = claim
        assert new.claim()["uuid"] == job_uuid
        assert server.job(job_uuid).status == "claimed"
        new.close()


def test_a_claim_under_way_as_the_server_shuts_down_reaches_its_runner(
    tmp_path: Path, database_url: str
) -> None:
    """A replica told to stop (SIGTERM) stops claiming before it closes the channels: a claim
    already in the database reaches its runner over the channel still open, and only then
    does the channel close with 1012 (the runner reports the job through another replica).
    Closed first, the claim would land for no one."""
    with serve_in_process(tmp_path, database_url, heartbeat_timeout=300.0) as server:
        dispatcher, _, entered, release = _gate_claims(server)
        channel = server.channel("on-the-stopping-replica")
        channel.send({"event": "ready", "poll_timeout": 900})
        job_uuid = server.submit()
        assert entered.wait(10), "the claim never started"
        server.uvicorn.should_exit = True
        wait_until(lambda: dispatcher._stopping, timeout=10, message="claims stopping")
        release.set()
        assert channel.recv(timeout=30)["uuid"] == job_uuid
        assert channel.wait_closed(timeout=30)[0] == 1012
    engine = make_engine(database_url, writer=False)
    try:
        with engine.connect() as conn:
            status = conn.execute(
                sa.select(job.c.status).where(job.c.uuid == uuid.UUID(job_uuid))
            ).scalar_one()
    finally:
        engine.dispose()
    assert JobStatus(status) == JobStatus.CLAIMED  # its runner holds it
