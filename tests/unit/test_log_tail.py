"""A job's last live-log chunks (``LogTail``) stored with the move that ends it, on a real
database of each engine: on PostgreSQL in the move's own statement, storing exactly what
``job_log_store`` stores (what is stored is skipped, by offset), only if the job moved and was
in flight; a move whose compare-and-set fails leaves stored what it always left."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from benchrunner.core.states import JobStatus
from benchrunner.server.moves.move import Move, apply
from benchrunner.server.store import jobs
from benchrunner.server.store.direct import Direct
from benchrunner.server.store.job_logs import (
    LogTail,
    PendingChunk,
    job_log_chunks,
    job_log_store,
)
from benchrunner.server.store.jobs import JobRow
from tests.unit.test_claim_policy import World

LIMIT = 64
"""Bytes of a stream the tests' jobs keep."""


@pytest.fixture
def statements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The first word of each statement the store runs from here on (all go through
    ``Direct``, an ``INSERT`` of several rows through its ``run_many``)."""
    ran: list[str] = []
    execute, run_many = Direct._execute, Direct.run_many

    def counted(self: Direct, conn: Any, params: Any) -> Any:
        ran.append(str(self.statement).split()[0])
        return execute(self, conn, params)

    def counted_many(self: Direct, conn: Any, rows: Any) -> None:
        if rows:
            ran.append(str(self.statement).split()[0])
        run_many(self, conn, rows)

    monkeypatch.setattr(Direct, "_execute", counted)
    monkeypatch.setattr(Direct, "run_many", counted_many)
    return ran


def _chunk(stream: str, offset: int, text: str) -> PendingChunk:
    raw = text.encode()
    return PendingChunk(stream, offset, raw[: max(0, LIMIT - offset)], offset + len(raw))


def _stored(world: World, job_id: int) -> list[tuple[str, int, int, str, str | None]]:
    return [
        (c.stream, c.offset, c.size, c.kind.value, c.data)
        for c in world.db.read_sync(job_log_chunks, job_id, 0, 1000)
    ]


def _completed(job: JobRow, world: World, tail: LogTail) -> Move:
    return Move(job, JobStatus.COMPLETED, world.now(), "runner completed", "r", log=tail)


def test_a_tail_and_its_move_are_one_statement_on_postgresql(
    world: World, statements: list[str]
) -> None:
    (job,) = world.running(("r",))
    tail = LogTail(job.id, [_chunk("stdout", 0, "Mon Nov 30\n")], LIMIT)
    statements.clear()

    assert world.write(apply, _completed(job, world, tail))

    one = world.db.capabilities.writes_in_ctes
    assert statements == (["WITH"] if one else ["SELECT", "INSERT", "UPDATE", "INSERT"])
    assert tail.stored is True
    assert _stored(world, job.id) == [("stdout", 0, 11, "data", "Mon Nov 30\n")]
    assert world.db.read_sync(jobs.job_get, job.id).status == JobStatus.COMPLETED  # type: ignore[union-attr]


# Each case: the chunks stored before the result (each its own write), then the tail's.
CASES: dict[str, tuple[list[PendingChunk], list[PendingChunk]]] = {
    "nothing-stored": ([], [_chunk("stdout", 0, "a\n"), _chunk("stderr", 0, "err\n")]),
    "stored-up-to-the-tail": (
        [_chunk("stdout", 0, "one\n")],
        [_chunk("stdout", 4, "two\n"), _chunk("stdout", 8, "three\n")],
    ),
    "the-tail-resent-whole": ([_chunk("stdout", 0, "one\n"), _chunk("stdout", 4, "two\n")], []),
    "a-resend-ending-where-stored": (
        [_chunk("stdout", 0, "one\n"), _chunk("stdout", 4, "two\n")],
        [_chunk("stdout", 4, "two\n"), _chunk("stdout", 8, "three\n")],
    ),
    "a-resend-cut-elsewhere": (  # the stored end falls inside a tail's chunk
        [_chunk("stdout", 0, "one\n"), _chunk("stdout", 4, "two\n")],
        [_chunk("stdout", 2, "e\ntwo\nthree\n")],
    ),
    "a-gap-then-bytes": ([_chunk("stdout", 0, "one\n")], [_chunk("stdout", 10, "later\n")]),
    "a-gap-after-a-gap": ([_chunk("stdout", 6, "x\n")], [_chunk("stdout", 12, "y\n")]),
    "a-gap-past-the-limit": ([_chunk("stdout", 0, "a\n")], [_chunk("stdout", 70, "b\n")]),
    "a-gap-from-the-start": ([], [_chunk("stderr", 5, "late\n")]),
    "a-gap-over-the-stored-end": (
        [_chunk("stdout", 6, "x\n")],  # stored: a gap [0, 6) and x
        [_chunk("stdout", 3, "overlap\n"), _chunk("stdout", 20, "far\n")],
    ),
    "past-the-limit": ([_chunk("stdout", 0, "a" * 40)], [_chunk("stdout", 40, "b" * 40)]),
    "past-the-limit-marked-already": (
        [_chunk("stdout", 0, "a" * 70)],
        [_chunk("stdout", 70, "b\n"), _chunk("stderr", 0, "e\n")],
    ),
    "a-character-cut-at-the-limit": ([], [_chunk("stdout", 0, "a" * 62 + "€€")]),
}


STRADDLING = {"a-resend-cut-elsewhere", "a-gap-over-the-stored-end"}
"""Cases where a data row the tail would write from nothing stored straddles the stored end: the
move's statement moves nothing, and the tail is stored apart before the move is made again."""


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_a_tail_stores_what_the_batched_write_stores(
    world: World, statements: list[str], case: str
) -> None:
    before, last = CASES[case]
    by_move, by_batch = world.running(("a", "b"))
    for job in (by_move, by_batch):
        for chunk in before:
            world.write(job_log_store, {job.id: [chunk]}, LIMIT)

    tail = LogTail(by_move.id, last, LIMIT)
    statements.clear()
    assert world.write(apply, _completed(by_move, world, tail))
    if world.db.capabilities.writes_in_ctes:
        apart = ["SELECT", "INSERT", "WITH"] if last else ["SELECT", "WITH"]
        assert statements == ["WITH", *(apart if case in STRADDLING else [])]
    world.write(job_log_store, {by_batch.id: last}, LIMIT)

    assert tail.stored is True
    assert _stored(world, by_move.id) == _stored(world, by_batch.id)


def test_a_move_that_fails_stores_its_tail_only_if_the_job_is_in_flight(
    world: World, statements: list[str]
) -> None:
    flying, ended = world.running(("a", "b"))
    world.finish(ended.id)
    chunks = [_chunk("stdout", 0, "line\n")]
    # On PostgreSQL the move's statement, which stores nothing when it moves nothing, then the
    # tail's statements and the move again: what the tail stores is what it stored before.
    tried = ["WITH"] if world.db.capabilities.writes_in_ctes else []
    move = tried or ["UPDATE"]

    # Still running, but not this runner's: the move fails, the job's log takes the tail, as
    # when the tail was stored ahead of the move by statements of its own.
    flying_tail = LogTail(flying.id, chunks, LIMIT)
    not_ours = dataclasses.replace(_completed(flying, world, flying_tail), owner=-1)
    statements.clear()
    assert not world.write(apply, not_ours)
    assert statements == [*tried, "SELECT", "INSERT", *move]
    assert flying_tail.stored is True
    assert _stored(world, flying.id) == [("stdout", 0, 5, "data", "line\n")]
    assert world.db.read_sync(jobs.job_get, flying.id).status == JobStatus.RUNNING  # type: ignore[union-attr]

    # Finished: neither the move nor the tail.
    ended_tail = LogTail(ended.id, chunks, LIMIT)
    statements.clear()
    assert not world.write(apply, _completed(ended, world, ended_tail))
    assert statements == [*tried, "SELECT", *move]
    assert ended_tail.stored is False
    assert _stored(world, ended.id) == []


def test_a_late_result_moves_its_failed_job_without_its_tail(world: World) -> None:
    (job,) = world.running(("r",))
    failed = Move(job, JobStatus.FAILED, world.now(), "timed out")
    assert world.write(apply, failed)
    late = world.db.read_sync(jobs.job_get, job.id)
    assert late is not None
    tail = LogTail(job.id, [_chunk("stdout", 0, "line\n")], LIMIT)

    assert world.write(apply, _completed(late, world, tail))

    assert tail.stored is False  # a finished job's log never grows
    assert _stored(world, job.id) == []
