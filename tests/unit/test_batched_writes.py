"""The writes that several jobs share, on a real database: live log chunks (``job_log_store``,
held and written in batches by ``LiveLogs``) and heartbeats (``jobs_touch``), each a few
statements whatever the number of jobs."""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.core.clock import SystemClock
from benchrunner.core.states import JobStatus
from benchrunner.core.templates import TemplateRegistry
from benchrunner.core.tiers import Plan
from benchrunner.protocol import Log
from benchrunner.server.blobs.blob_store import LocalBlobStore
from benchrunner.server.config import ServerSettings
from benchrunner.server.context import ServerContext
from benchrunner.server.logs.live_logs import LiveLogs
from benchrunner.server.moves.move import Move, apply
from benchrunner.server.store import jobs, tables, transitions
from benchrunner.server.store.job_logs import (
    ChunkKind,
    Flushed,
    PendingChunk,
    job_log_chunks,
    job_log_store,
)
from benchrunner.server.store.transitions import Beat
from tests.unit.test_claim_policy import World

LIMIT = 100


def _running(world: World, count: int) -> tuple[int, list[int]]:
    """A runner and ``count`` jobs of it, running."""
    spec = world.spec("s")
    runner = world.runner("r", [spec])
    org = world.org("acme", Plan.TEAM)
    ids = []
    for _ in range(count):
        job_id = world.job(org, spec)
        assert world.claim(runner) == job_id
        world.start(job_id, runner)
        ids.append(job_id)
    return runner, ids


def _cancel(conn: Connection, job_id: int, now: dt.datetime, user: str | None) -> None:
    """The runner's cancel of a job (with ``user``: that user's)."""
    row = jobs.job_get(conn, job_id)
    assert row is not None
    assert apply(conn, Move(row, JobStatus.CANCELED, now, "canceled", requested_by=user))


def _chunk(stream: str, offset: int, text: str) -> PendingChunk:
    raw = text.encode()
    return PendingChunk(stream, offset, raw[: max(0, LIMIT - offset)], offset + len(raw))


def _log(world: World, job_id: int) -> list[tuple[str, int, ChunkKind, str | None]]:
    chunks = world.db.read_sync(job_log_chunks, job_id, 0, 100)
    return [(c.stream, c.offset, c.kind, c.data) for c in chunks]


def test_several_jobs_chunks_are_stored_by_offset_in_one_batch(world: World) -> None:
    _, (first, second, finished) = _running(world, 3)
    world.write(_cancel, finished, world.now(), None)
    world.write(job_log_store, {first: [_chunk("stdout", 0, "abc")]}, LIMIT)

    flushed = world.write(
        job_log_store,
        {
            first: [
                _chunk("stdout", 0, "abcdef"),  # a resend that goes further: "def" is new
                _chunk("stdout", 0, "abc"),  # all stored already
                _chunk("stderr", 0, "e\n"),
                _chunk("stdout", 10, "xy"),  # bytes 6..10 never came
                _chunk("stdout", 90, "z" * 20),  # crosses the limit: 10 kept, one marker
                _chunk("stdout", 120, "late"),  # past it: nothing, no second marker
            ],
            second: [_chunk("stdout", 0, "other")],
            finished: [_chunk("stdout", 0, "too late")],
        },
        LIMIT,
    )

    assert flushed == {
        first: Flushed(in_flight=True, full=frozenset({"stdout"})),
        second: Flushed(in_flight=True),
        finished: Flushed(in_flight=False),
    }
    assert _log(world, first) == [
        ("stdout", 0, ChunkKind.DATA, "abc"),
        ("stdout", 3, ChunkKind.DATA, "def"),
        ("stderr", 0, ChunkKind.DATA, "e\n"),
        ("stdout", 6, ChunkKind.GAP, None),
        ("stdout", 10, ChunkKind.DATA, "xy"),
        ("stdout", 12, ChunkKind.GAP, None),
        ("stdout", 90, ChunkKind.DATA, "z" * 10),
        ("stdout", LIMIT, ChunkKind.TRUNCATED, None),
    ]
    assert _log(world, second) == [("stdout", 0, ChunkKind.DATA, "other")]
    assert _log(world, finished) == []
    again = world.write(job_log_store, {first: [_chunk("stdout", 200, "more")]}, LIMIT)
    assert again == {first: Flushed(in_flight=True, full=frozenset({"stdout"}))}
    assert len(_log(world, first)) == 8  # the marker is stored once


def test_a_stream_filled_to_its_limit_is_marked_by_the_next_chunk(world: World) -> None:
    _, (job_id,) = _running(world, 1)
    assert world.write(job_log_store, {job_id: [_chunk("stdout", 0, "a" * LIMIT)]}, LIMIT) == {
        job_id: Flushed(in_flight=True)
    }
    assert world.write(job_log_store, {job_id: [_chunk("stdout", LIMIT, "b")]}, LIMIT) == {
        job_id: Flushed(in_flight=True, full=frozenset({"stdout"}))
    }
    assert [kind for _, _, kind, _ in _log(world, job_id)] == [ChunkKind.DATA, ChunkKind.TRUNCATED]


def test_heartbeats_of_several_jobs_are_stored_together(world: World) -> None:
    runner, (first, second, canceled) = _running(world, 3)
    world.write(_cancel, canceled, world.now(), "someone")
    at = world.now() + dt.timedelta(seconds=30)
    later = at + dt.timedelta(seconds=1)
    gone = 10**9  # a job deleted meanwhile (its project was)
    beats = [Beat(first, runner, at), Beat(second, runner, later), Beat(canceled, runner, at)]
    beats.append(Beat(gone, runner, at))

    stopped = world.write(transitions.jobs_touch, beats)

    assert stopped == {canceled, gone}
    stored = {job_id: world.db.read_sync(jobs.job_get, job_id) for job_id in (first, second)}
    assert {job_id: row.last_heartbeat for job_id, row in stored.items() if row} == {
        first: at,
        second: later,
    }
    seen = world.db.read_sync(
        lambda conn: conn.execute(
            sa.select(tables.runner.c.last_heartbeat).where(tables.runner.c.id == runner)
        ).scalar_one()
    )
    assert seen == later  # the newest of its jobs'


@pytest.mark.parametrize("count", [1, 3, 5])
def test_heartbeats_of_any_number_of_jobs_tell_which_stopped(world: World, count: int) -> None:
    """Lists of jobs of any length, padded or not (``direct.padded_length``)."""
    runner, job_ids = _running(world, count)
    world.write(_cancel, job_ids[-1], world.now(), "someone")
    at = world.now() + dt.timedelta(seconds=30)

    stopped = world.write(transitions.jobs_touch, [Beat(job, runner, at) for job in job_ids])

    assert stopped == {job_ids[-1]}


def test_a_jobs_output_past_the_batch_size_is_stored_whole_in_parts(
    world: World, tmp_path: Path
) -> None:
    _, (job_id,) = _running(world, 1)
    job = world.db.read_sync(jobs.job_get, job_id)
    assert job is not None
    ctx = ServerContext(
        settings=ServerSettings(data_dir=tmp_path, db=world.db.url),
        db=world.db,
        blobs=LocalBlobStore(tmp_path / "blobs"),
        templates=TemplateRegistry.empty(),
        clock=SystemClock(),
        secret_key="k",
    )
    pieces = [f"{n:02d}" + "x" * (60_000 - 3) + "\n" for n in range(10)]  # 600 kB: three parts

    async def scenario() -> None:
        live = LiveLogs(ctx)
        offset = 0
        for piece in pieces:
            live.add(job_id, Log(job=job.uuid, stream="stdout", offset=offset, data=piece))
            offset += len(piece)
        await live.flush()
        assert len(live) == 0

    asyncio.run(scenario())
    stored = world.db.read_sync(job_log_chunks, job_id, 0, 100)
    assert [chunk.data for chunk in stored] == pieces
    assert {chunk.kind for chunk in stored} == {ChunkKind.DATA}
