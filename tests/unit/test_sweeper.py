"""The sweeper's wait of one heartbeat timeout after taking the lead, on injected clocks: runners
need that long to reconnect after a restart before their silence counts
(docs/decisions/timeouts-recovery.md)."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchrunner.core.states import JobStatus
from benchrunner.core.templates import TemplateRegistry
from benchrunner.core.tiers import Plan
from benchrunner.server.blobs.blob_store import LocalBlobStore
from benchrunner.server.config import ServerSettings
from benchrunner.server.context import ServerContext
from benchrunner.server.moves.move import Moves
from benchrunner.server.recovery.sweeper import Sweeper
from benchrunner.server.recovery.watchdog import Watchdog
from benchrunner.server.store import jobs
from benchrunner.server.store.engine import Database
from tests.databases import with_schema
from tests.unit.test_claim_policy import T0, World

HEARTBEAT_TIMEOUT = 30.0


class WallClock:
    def __init__(self, now: dt.datetime) -> None:
        self.at = now

    def now(self) -> dt.datetime:
        return self.at


class SteadyClock:
    def __init__(self) -> None:
        self.at = 1000.0

    def monotonic(self) -> float:
        return self.at

    async def sleep_until(self, deadline: float) -> None:
        raise AssertionError("step() never waits")


class SwitchedLeadership:
    def __init__(self) -> None:
        self.leader = True

    async def hold(self) -> bool:
        return self.leader

    async def release(self) -> None:
        self.leader = False


@pytest.fixture
def world(database_url: str) -> Iterator[World]:
    with_schema(database_url)
    db = Database(database_url)
    yield World(db)
    db.close()


def test_the_leader_sweeps_only_after_leading_for_a_heartbeat_timeout(
    world: World, tmp_path: Path
) -> None:
    spec = world.spec("s")
    runner = world.runner("r", [spec])
    job_id = world.job(world.org("acme", Plan.TEAM), spec)
    assert world.claim(runner) == job_id
    world.start(job_id, runner)
    # Silent far longer than the heartbeat timeout, not yet past its hard timeout (60 s + 60 s).
    wall = WallClock(T0 + dt.timedelta(seconds=100))
    steady = SteadyClock()
    ctx = ServerContext(
        settings=ServerSettings(
            data_dir=tmp_path, db=world.db.url, heartbeat_timeout=HEARTBEAT_TIMEOUT
        ),
        db=world.db,
        blobs=LocalBlobStore(tmp_path / "blobs"),
        templates=TemplateRegistry.empty(),
        clock=wall,
        monotonic=steady,
        secret_key="k",
    )
    watchdog = Watchdog(ctx, moves=Moves(ctx), on_completed=lambda _id: None)
    leadership = SwitchedLeadership()
    sweeper = Sweeper(ctx, watchdog, leadership, 1.0, on_completed=lambda _id: None)

    def status() -> JobStatus:
        row = world.db.read_sync(jobs.job_get, job_id)
        assert row is not None
        return row.status

    async def scenario() -> None:
        assert not await sweeper.step()  # takes the lead: runners may be reconnecting
        steady.at += HEARTBEAT_TIMEOUT - 0.1
        assert not await sweeper.step()
        assert status() == JobStatus.RUNNING
        steady.at += 0.1
        assert await sweeper.step()
        assert status() == JobStatus.FAILED

        leadership.leader = False  # another replica leads for a while
        steady.at += 5
        assert not await sweeper.step()
        leadership.leader = True  # back: the wait starts over
        steady.at += 100
        assert not await sweeper.step()
        steady.at += HEARTBEAT_TIMEOUT - 0.1
        assert not await sweeper.step()
        steady.at += 0.1
        assert await sweeper.step()
        watchdog.stop()

    asyncio.run(scenario())
