"""When ``LiveLogs`` writes, on a real database and a hand-driven clock: a job's chunks cost at
most one write a second, however many arrive, each written about a second after it came, and a
job's last chunks are written at once when its result comes, by its move (a job shorter than a
second has no write of its own; docs/explanation/live-logs.md)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from pathlib import Path
from typing import ParamSpec, TypeVar

import pytest

from benchrunner.core.states import JobStatus
from benchrunner.core.templates import TemplateRegistry
from benchrunner.core.tiers import Plan
from benchrunner.protocol import Log
from benchrunner.server.blobs.blob_store import LocalBlobStore
from benchrunner.server.config import ServerSettings
from benchrunner.server.context import ServerContext
from benchrunner.server.logs.live_logs import LiveLogs
from benchrunner.server.moves import move
from benchrunner.server.store import jobs
from benchrunner.server.store.engine import Database, Unit
from benchrunner.server.store.job_logs import LogTail, job_log_chunks
from tests.databases import with_schema
from tests.inprocess import ManualClock
from tests.unit.test_claim_policy import World

P = ParamSpec("P")
T = TypeVar("T")


class CountedDatabase(Database):
    """The real database, counting the lazy writes (the live log's) it is asked for."""

    lazy_writes = 0
    gate: asyncio.Event | None = None
    """When set, each lazy write waits for it to open before it writes."""

    async def write_lazy(self, unit: Unit[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        self.lazy_writes += 1
        if self.gate is not None:
            await self.gate.wait()
        return await super().write_lazy(unit, *args, **kwargs)


@pytest.fixture
def world(database_url: str) -> Iterator[World]:
    with_schema(database_url)
    db = CountedDatabase(database_url)
    yield World(db)
    db.close()


def _running_job(world: World) -> tuple[int, uuid.UUID]:
    spec = world.spec("s")
    runner = world.runner("r", [spec])
    job_id = world.job(world.org("acme", Plan.TEAM), spec)
    assert world.claim(runner) == job_id
    world.start(job_id, runner)
    job = world.db.read_sync(jobs.job_get, job_id)
    assert job is not None
    return job_id, job.uuid


def _context(world: World, tmp_path: Path, clock: ManualClock) -> ServerContext:
    return ServerContext(
        settings=ServerSettings(data_dir=tmp_path, db=world.db.url),
        db=world.db,
        blobs=LocalBlobStore(tmp_path / "blobs"),
        templates=TemplateRegistry.empty(),
        clock=clock,
        monotonic=clock,
        secret_key="k",
    )


class Chunks:
    """Chunks of one job's stdout, numbered lines in turn."""

    def __init__(self, job: uuid.UUID) -> None:
        self.job = job
        self.offset = 0
        self.sent: list[str] = []

    def next(self) -> Log:
        data = f"line {len(self.sent)}\n"
        message = Log(job=self.job, stream="stdout", offset=self.offset, data=data)
        self.offset += len(data)
        self.sent.append(data)
        return message


async def _until(condition: Callable[[], bool], what: str) -> None:
    for _ in range(1000):  # 10 s at most
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(what)


async def _settled(work: Callable[[], Awaitable[None]] | None = None) -> None:
    """Let the event loop run the writer's task (and the database's threads) for a while."""
    for _ in range(20):
        await asyncio.sleep(0.01)
    if work is not None:
        await work()


def _stored(world: World, job_id: int) -> list[str | None]:
    return [chunk.data for chunk in world.db.read_sync(job_log_chunks, job_id, 0, 1000)]


def test_a_jobs_chunks_within_a_second_cost_one_write(world: World, tmp_path: Path) -> None:
    db = world.db
    assert isinstance(db, CountedDatabase)
    job_id, job_uuid = _running_job(world)
    clock = ManualClock()
    chunks = Chunks(job_uuid)

    async def scenario() -> None:
        live = LiveLogs(_context(world, tmp_path, clock))
        live.start()
        try:
            for _ in range(30):
                live.add(job_id, chunks.next())
                clock.advance(0.03)  # 30 chunks in 0.9 s
                await asyncio.sleep(0)
            await _settled()
            assert db.lazy_writes == 0, "no write within a second of the first chunk"
            clock.advance(0.1)  # a second after the first chunk
            await _until(lambda: db.lazy_writes == 1, "the second's chunks are written")
            await _until(lambda: len(live) == 0, "nothing left pending")
            for _ in range(10):
                live.add(job_id, chunks.next())
            clock.advance(0.5)
            await _settled()
            assert db.lazy_writes == 1, "no second write within the second"
            clock.advance(0.5)  # a second after the first write
            await _until(lambda: db.lazy_writes == 2, "the next second's chunks are written")
            await _until(lambda: len(live) == 0, "nothing left pending")
            await _settled()
            assert db.lazy_writes == 2, "each second's chunks were one write"
        finally:
            await live.stop()

    asyncio.run(scenario())
    assert _stored(world, job_id) == chunks.sent


def test_a_jobs_last_chunks_are_written_at_once_not_on_the_timer(
    world: World, tmp_path: Path
) -> None:
    db = world.db
    assert isinstance(db, CountedDatabase)
    job_id, job_uuid = _running_job(world)
    clock = ManualClock()
    chunks = Chunks(job_uuid)

    async def scenario() -> None:
        live = LiveLogs(_context(world, tmp_path, clock))
        live.start()
        try:
            live.add(job_id, chunks.next())
            clock.advance(1.0)
            await _until(lambda: db.lazy_writes == 1, "the first chunk is written")
            for _ in range(5):
                live.add(job_id, chunks.next())
            # The clock stands still: a flush that waited for the one-second timer would hang.
            async with asyncio.timeout(10):
                await live.flush_job(job_id)
            assert db.lazy_writes == 2
            assert _stored(world, job_id) == chunks.sent
            assert len(live) == 0
            clock.advance(2.0)
            await _settled()
            assert db.lazy_writes == 2, "nothing was left for the timer to write"
        finally:
            await live.stop()

    asyncio.run(scenario())


def test_several_jobs_chunks_share_one_write(world: World, tmp_path: Path) -> None:
    db = world.db
    assert isinstance(db, CountedDatabase)
    streams = _running_jobs(world, ("a", "b", "c"))
    clock = ManualClock()

    async def scenario() -> None:
        live = LiveLogs(_context(world, tmp_path, clock))
        live.start()
        try:
            for _ in range(4):
                for job_id, chunks in streams.items():
                    live.add(job_id, chunks.next())
            clock.advance(1.0)
            await _until(lambda: len(live) == 0, "every job's chunks are written")
            await _settled()
            assert db.lazy_writes == 1
        finally:
            await live.stop()

    asyncio.run(scenario())
    for job_id, chunks in streams.items():
        assert _stored(world, job_id) == chunks.sent


def _running_jobs(world: World, runners: tuple[str, ...]) -> dict[int, Chunks]:
    """A running job for each of ``runners``, and its chunks, by job id."""
    return {job.id: Chunks(job.uuid) for job in world.running(runners)}


def test_a_result_waits_for_a_write_under_way_only_if_it_took_the_jobs_chunks(
    world: World, tmp_path: Path
) -> None:
    db = world.db
    assert isinstance(db, CountedDatabase)
    (a, a_chunks), (b, b_chunks) = _running_jobs(world, ("a", "b")).items()

    async def scenario() -> None:
        db.gate = asyncio.Event()
        live = LiveLogs(_context(world, tmp_path, ManualClock()))
        live.add(a, a_chunks.next())
        writing = asyncio.create_task(live.flush())  # takes a's chunk; waits at the gate
        await _until(lambda: db.lazy_writes == 1, "a write of a's chunk under way")
        live.add(a, a_chunks.next())
        live.add(b, b_chunks.next())
        async with asyncio.timeout(10):
            taken_b = await live.take_job(b)  # another job's write does not delay b's result
        assert taken_b is not None and not writing.done()
        taking_a = asyncio.create_task(live.take_job(a))
        await _settled()
        assert not taking_a.done(), "a's last chunk follows the write of its first"
        db.gate.set()
        async with asyncio.timeout(10):
            taken_a = await taking_a
            await writing
        assert taken_a is not None
        assert await _ending(world, b, JobStatus.COMPLETED, taken_b.tail)
        assert await _ending(world, a, JobStatus.COMPLETED, taken_a.tail)

    asyncio.run(scenario())
    assert _stored(world, a) == a_chunks.sent
    assert _stored(world, b) == b_chunks.sent


def _one_job(world: World) -> tuple[CountedDatabase, int, ManualClock, Chunks]:
    """A running job, the counted database, a clock that stands still and the job's chunks."""
    db = world.db
    assert isinstance(db, CountedDatabase)
    job_id, job_uuid = _running_job(world)
    return db, job_id, ManualClock(), Chunks(job_uuid)


def _into(refused: list[Log]) -> Callable[[Log], Coroutine[object, object, None]]:
    """A sender's refusal callback that keeps the refused chunks in ``refused``."""

    async def refuse(message: Log) -> None:
        refused.append(message)

    return refuse


async def _ending(world: World, job_id: int, to: JobStatus, tail: LogTail | None) -> bool:
    """The move that ends the job, as a runner's result makes it, carrying ``tail``."""
    job = await world.db.read(jobs.job_get, job_id)
    assert job is not None
    return await world.db.write(move.apply, move.Move(job, to, world.now(), "ends", log=tail))


@pytest.mark.parametrize("written", [True, False], ids=["first-written", "shorter-than-a-write"])
def test_a_jobs_last_chunks_are_stored_by_the_move_that_ends_it(
    world: World, tmp_path: Path, written: bool
) -> None:
    db, job_id, clock, chunks = _one_job(world)
    refused: list[Log] = []
    refuse = _into(refused)

    async def scenario() -> None:
        live = LiveLogs(_context(world, tmp_path, clock))
        live.start()
        try:
            live.add(job_id, chunks.next())
            await _settled()
            # A job shorter than the interval: not even its first chunk has a write of its own.
            assert db.lazy_writes == 0
            if written:
                clock.advance(1.0)
                await _until(lambda: db.lazy_writes == 1, "the first chunk is written")
            for _ in range(5):
                live.add(job_id, chunks.next(), refuse)
            async with asyncio.timeout(10):  # the clock stands still: not the timer's write
                taken = await live.take_job(job_id)
            assert taken is not None
            assert len(live) == 0
            assert await _ending(world, job_id, JobStatus.COMPLETED, taken.tail)
            assert taken.tail.stored is True
            await live.settle(taken)
            clock.advance(2.0)
            await _settled()
            assert db.lazy_writes == int(written), "the last chunks had no write of their own"
        finally:
            await live.stop()

    asyncio.run(scenario())
    assert _stored(world, job_id) == chunks.sent
    assert refused == []


@pytest.mark.parametrize("moved", [True, False], ids=["move-tried", "no-move"])
def test_the_last_chunks_of_a_job_no_longer_in_flight_are_refused(
    world: World, tmp_path: Path, moved: bool
) -> None:
    db, job_id, clock, chunks = _one_job(world)
    refused: list[Log] = []
    refuse = _into(refused)

    async def scenario() -> None:
        live = LiveLogs(_context(world, tmp_path, clock))
        for _ in range(3):
            live.add(job_id, chunks.next(), refuse)
        assert await _ending(world, job_id, JobStatus.CANCELED, None)  # a user's cancel, say
        taken = await live.take_job(job_id)
        assert taken is not None
        if moved:  # the result's move finds the job finished: neither it nor the chunks
            assert not await _ending(world, job_id, JobStatus.COMPLETED, taken.tail)
            assert taken.tail.stored is False
        await live.settle(taken)  # no move tried: stored apart, which finds it finished
        assert db.lazy_writes == (0 if moved else 1)

    asyncio.run(scenario())
    assert _stored(world, job_id) == []
    assert [message.offset for message in refused] == [chunks.offset - len(chunks.sent[-1])]
