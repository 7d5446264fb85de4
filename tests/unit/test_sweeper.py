"""The sweeper's wait of one heartbeat timeout after taking the lead, on injected clocks: runners
need that long to reconnect after a restart before their silence counts
(docs/decisions/timeouts-recovery.md)."""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.core.states import JobStatus
from benchrunner.core.templates import TemplateRegistry
from benchrunner.core.tiers import Plan
from benchrunner.server.blobs.blob_store import LocalBlobStore
from benchrunner.server.config import ServerSettings
from benchrunner.server.context import ServerContext
from benchrunner.server.moves.move import Moves
from benchrunner.server.recovery.sweeper import KEY_EXPIRY_SHARE, Sweeper
from benchrunner.server.recovery.watchdog import Watchdog
from benchrunner.server.store import accounts, idempotency, jobs, pending_judgments, reports
from benchrunner.server.store.idempotency import KeyRef
from benchrunner.server.store.tables import idempotency_key
from tests.new_reports import new_report_on
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


def _sweeper(
    world: World,
    tmp_path: Path,
    wall: WallClock,
    steady: SteadyClock,
    leadership: SwitchedLeadership,
    idempotency_window: float = 300.0,
    awaiting_judgment: list[int] | None = None,
) -> tuple[Sweeper, Watchdog]:
    """A sweeper sweeping every second on ``world``'s database, on the clocks given."""
    ctx = ServerContext(
        settings=ServerSettings(
            data_dir=tmp_path,
            db=world.db.url,
            heartbeat_timeout=HEARTBEAT_TIMEOUT,
            idempotency_window=idempotency_window,
        ),
        db=world.db,
        blobs=LocalBlobStore(tmp_path / "blobs"),
        templates=TemplateRegistry.empty(),
        clock=wall,
        monotonic=steady,
        secret_key="k",
    )
    watchdog = Watchdog(ctx, moves=Moves(ctx), on_completed=lambda _id: None)
    return Sweeper(
        ctx,
        watchdog,
        leadership,
        1.0,
        on_completed=lambda _id: None,
        on_awaiting_judgment=(awaiting_judgment if awaiting_judgment is not None else []).append,
    ), watchdog


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
    leadership = SwitchedLeadership()
    sweeper, watchdog = _sweeper(world, tmp_path, wall, steady, leadership)

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


def test_expired_idempotency_keys_are_deleted_once_every_tenth_of_the_window(
    world: World, tmp_path: Path
) -> None:
    window = 300.0
    wall, steady = WallClock(T0), SteadyClock()
    sweeper, watchdog = _sweeper(
        world, tmp_path, wall, steady, SwitchedLeadership(), idempotency_window=window
    )

    async def claim_key(key: str) -> None:
        expired_before = wall.at - dt.timedelta(seconds=window)
        await world.db.write(
            idempotency.key_claim, KeyRef("user:1", key), "hash", wall.at, expired_before
        )

    def counted(conn: Connection) -> int:
        return int(
            conn.execute(sa.select(sa.func.count()).select_from(idempotency_key)).scalar_one()
        )

    async def scenario() -> None:
        await claim_key("old")
        wall.at += dt.timedelta(seconds=window + 1)
        await sweeper.sweep()  # the first sweep deletes what expired
        assert await world.db.read(counted) == 0
        await claim_key("new")
        wall.at += dt.timedelta(seconds=window + 1)
        steady.at += window * KEY_EXPIRY_SHARE - 1
        await sweeper.sweep()  # within a tenth of the window of the last deletion
        assert await world.db.read(counted) == 1
        steady.at += 1
        await sweeper.sweep()
        assert await world.db.read(counted) == 0
        watchdog.stop()

    asyncio.run(scenario())


def test_a_direct_runs_report_left_awaiting_its_judgment_is_handed_on_once_past_the_timeout(
    world: World, tmp_path: Path
) -> None:
    """docs/decisions/processing.md: a direct run's report a stop left awaiting its judgment
    (its results kept) is handed to the processor by the sweeper once it has waited longer
    than the heartbeat timeout plus one interval, not before (its request may be judging it);
    one judged is not."""

    def create(conn: Connection) -> tuple[int, int]:
        leader = accounts.user_get_or_create(conn, "l@x", "l", admin=False, now=T0).id
        org = accounts.organization_create(conn, "org", Plan.TEAM, T0, leader_id=leader)
        project = accounts.project_create(conn, org.id, "p", "public", T0).id
        new = new_report_on(conn, project, "main", "ci", "json", T0)
        left, judged = (reports.report_create(conn, new)[0] for _ in range(2))
        for report_id in (left, judged):
            pending_judgments.keep(conn, report_id, pending_judgments.encode([]))
        pending_judgments.judged(conn, judged)
        return left, judged

    left, _ = world.db.write_sync(create)
    wall = WallClock(T0 + dt.timedelta(seconds=HEARTBEAT_TIMEOUT))
    steady = SteadyClock()
    handed: list[int] = []
    sweeper, watchdog = _sweeper(
        world, tmp_path, wall, steady, SwitchedLeadership(), awaiting_judgment=handed
    )

    async def scenario() -> None:
        await sweeper.sweep()
        assert handed == []  # waited one heartbeat timeout, not one interval more
        wall.at += dt.timedelta(seconds=1.1)
        await sweeper.sweep()
        assert handed == [left]
        watchdog.stop()

    asyncio.run(scenario())
