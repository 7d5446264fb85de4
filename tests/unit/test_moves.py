"""``moves.move``, on a real database of each engine: a move's transition writes its status,
columns and event rows in one statement on PostgreSQL, is a compare-and-set, and, once made,
is logged, counted and announced to the hooks."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from benchrunner.core.clock import SystemClock
from benchrunner.core.events import JobEvent
from benchrunner.core.states import JobStatus
from benchrunner.core.templates import TemplateRegistry
from benchrunner.core.tiers import Plan
from benchrunner.server.blobs.blob_store import LocalBlobStore
from benchrunner.server.config import ServerSettings
from benchrunner.server.context import ServerContext
from benchrunner.server.logs.server_log import JsonFormatter
from benchrunner.server.logs.transition_log import Timeout
from benchrunner.server.moves.move import Hooks, Move, Moves, apply, apply_running
from benchrunner.server.store import jobs, tables, transitions
from benchrunner.server.store.direct import Direct
from benchrunner.server.store.jobs import JobRow
from tests.unit.test_claim_policy import World


@pytest.fixture
def ctx(world: World, tmp_path: Path) -> ServerContext:
    return ServerContext(
        settings=ServerSettings(data_dir=tmp_path, db=world.db.url),
        db=world.db,
        blobs=LocalBlobStore(tmp_path / "blobs"),
        templates=TemplateRegistry.empty(),
        clock=SystemClock(),
        secret_key="k",
    )


def _claimed(world: World) -> tuple[int, JobRow]:
    """A runner and a job it claimed."""
    spec = world.spec("s")
    runner = world.runner("r", [spec])
    job_id = world.job(world.org("acme", Plan.TEAM), spec)
    assert world.claim(runner) == job_id
    return runner, _row(world, job_id)


def _row(world: World, job_id: int) -> JobRow:
    row = world.db.read_sync(jobs.job_get, job_id)
    assert row is not None
    return row


def _events(world: World, job_id: int) -> list[tuple[str, str | None, str]]:
    def unit(conn: sa.Connection) -> list[tuple[str, str | None, str]]:
        event = tables.job_event
        rows = conn.execute(
            sa.select(event.c.event_type, event.c.actor, event.c.message)
            .where(event.c.job_id == job_id)
            .order_by(event.c.id)
        )
        return [(r.event_type, r.actor, r.message) for r in rows]

    return world.db.read_sync(unit)


@pytest.fixture
def statements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The statements the store runs from here on (every one goes through ``Direct``)."""
    ran: list[str] = []
    execute = Direct._execute

    def counted(self: Direct, conn: Any, params: Any) -> Any:
        ran.append(str(self.statement).split()[0])
        return execute(self, conn, params)

    monkeypatch.setattr(Direct, "_execute", counted)
    return ran


def test_a_move_writes_its_status_columns_and_event_in_one_statement_on_postgresql(
    world: World, statements: list[str]
) -> None:
    runner, job = _claimed(world)
    now = world.now()
    statements.clear()
    failed = Move(job, JobStatus.FAILED, now, "it broke", "r", owner=runner)

    assert world.write(apply, failed)

    one = world.db.capabilities.writes_in_ctes
    assert statements == (["WITH"] if one else ["UPDATE", "INSERT"])
    row = _row(world, job.id)
    assert (row.status, row.completed) == (JobStatus.FAILED, now)
    assert _events(world, job.id)[-1] == (JobEvent.FAILED, "r", "it broke")


def test_a_move_is_a_compare_and_set(world: World) -> None:
    runner, job = _claimed(world)
    processed = Move(job, JobStatus.PROCESSED, world.now(), "parsed")
    elsewhere = Move(job, JobStatus.FAILED, world.now(), "not its runner", owner=runner + 1)
    before = _events(world, job.id)

    assert not world.write(apply, processed)  # not from claimed
    assert not world.write(apply, elsewhere)  # not this runner's job

    assert _row(world, job.id).status == JobStatus.CLAIMED
    assert _events(world, job.id) == before
    canceled = Move(job, JobStatus.CANCELED, world.now(), "runner canceled", "r", owner=runner)
    assert world.write(apply, canceled)
    assert not world.write(apply, canceled)  # once only
    assert [e for e, _, _ in _events(world, job.id)].count(JobEvent.CANCELED) == 1


def test_a_users_cancel_writes_the_request_then_the_cancel(
    world: World, statements: list[str]
) -> None:
    _, job = _claimed(world)
    statements.clear()
    why = "canceled by ann"

    assert world.write(apply, Move(job, JobStatus.CANCELED, world.now(), why, requested_by="ann"))

    one = world.db.capabilities.writes_in_ctes
    assert statements == (["WITH"] if one else ["UPDATE", "INSERT", "INSERT"])
    assert _events(world, job.id)[-2:] == [
        (JobEvent.CANCEL_REQUESTED, "ann", "ann asked to cancel"),
        (JobEvent.CANCELED, "system", why),
    ]


def test_a_returned_job_is_unclaimed_and_its_broadcast_goes_with_the_move(
    world: World, ctx: ServerContext
) -> None:
    _, job = _claimed(world)
    heard: list[tuple[str, object]] = []
    moves = Moves(
        ctx,
        Hooks(
            left_flight=lambda j: heard.append(("left flight", j.id)),
            returned=lambda j: heard.append(("returned", j.id)),
            broadcast=lambda spec_id: ("benchrunner_jobs", f"test job {spec_id}"),
        ),
    )
    returned = Move(job, JobStatus.PENDING, world.now(), "undelivered", event=JobEvent.RETURNED)

    assert asyncio.run(moves.move(returned))

    row = _row(world, job.id)
    assert (row.status, row.runner_id, row.claimed, row.nonce) == (
        JobStatus.PENDING,
        None,
        None,
        None,
    )
    assert heard == [("left flight", job.id), ("returned", job.id)]
    assert _events(world, job.id)[-1][0] == JobEvent.RETURNED


def test_a_made_move_is_logged_counted_and_announced_once(
    world: World, ctx: ServerContext, caplog: pytest.LogCaptureFixture
) -> None:
    _, job = _claimed(world)
    left: list[int] = []
    moves = Moves(ctx, Hooks(left_flight=lambda j: left.append(j.id)))
    reason = "heartbeat_timeout: silent"
    failed = Move(
        job,
        JobStatus.FAILED,
        world.now(),
        reason,
        event=JobEvent.HEARTBEAT_STALE_RECOVERED,
        reason=reason,
        timeout=Timeout.HEARTBEAT,
    )

    with caplog.at_level(logging.INFO, logger="benchrunner.transitions"):
        assert asyncio.run(moves.move(failed))
        assert not asyncio.run(moves.move(failed))

    assert left == [job.id]
    lines = [r for r in caplog.records if r.name == "benchrunner.transitions"]
    assert [(r.getMessage(), r.__dict__["reason"]) for r in lines] == [("job failed", reason)]
    metrics = ctx.metrics
    assert metrics.transition(JobStatus.CLAIMED, JobStatus.FAILED)._value.get() == 1
    assert metrics.timeouts.labels(kind="heartbeat")._value.get() == 1
    assert _events(world, job.id)[-1][0] == JobEvent.HEARTBEAT_STALE_RECOVERED


def test_a_completed_job_awaits_processing_unless_processed_with_it(
    world: World, ctx: ServerContext
) -> None:
    runner, job = _claimed(world)
    world.start(job.id, runner)
    job = _row(world, job.id)
    waiting: list[int] = []
    moves = Moves(ctx, Hooks(awaits_processing=waiting.append))
    now = world.now()
    completed = Move(job, JobStatus.COMPLETED, now, "runner completed", "r", runner="r")
    processed = Move(job, JobStatus.PROCESSED, now, "parsed", source=JobStatus.COMPLETED)

    def both(conn: sa.Connection) -> bool:
        return apply(conn, completed) and apply(conn, processed)

    assert world.write(both)
    moves.done(completed, processed)
    moves.done(completed)

    assert waiting == [job.id]
    assert _row(world, job.id).status == JobStatus.PROCESSED
    assert [e for e, _, _ in _events(world, job.id)][-2:] == [
        JobEvent.COMPLETED,
        JobEvent.PROCESSED,
    ]


def test_a_claim_reads_its_spec_in_the_statement_of_its_move(
    world: World, statements: list[str]
) -> None:
    spec = world.spec("s")
    runner = world.runner("r", [spec])
    job_id = world.job(world.org("acme", Plan.TEAM), spec)
    statements.clear()

    assert world.claim(runner) == job_id

    moved = [s for s in statements if s in ("WITH", "UPDATE")]
    assert moved == (["WITH"] if world.db.capabilities.writes_in_ctes else ["UPDATE"])
    assert _events(world, job_id)[-1][:2] == (JobEvent.CLAIMED, "r")


def test_a_runners_running_moves_its_job_once_then_only_refreshes_its_liveness(
    world: World, statements: list[str]
) -> None:
    runner, job = _claimed(world)
    now = world.now()
    statements.clear()

    started = world.write(apply_running, Move.running(job, runner, "r", now))

    assert started == transitions.Started(JobStatus.RUNNING, now, moved=True)
    one = world.db.capabilities.writes_in_ctes
    assert statements == (["WITH"] if one else ["UPDATE", "INSERT"])
    row = _row(world, job.id)
    assert (row.status, row.started, row.last_heartbeat) == (JobStatus.RUNNING, now, now)
    assert _events(world, job.id)[-1] == (JobEvent.STARTED, "r", "runner started the benchmark")
    later = world.now()
    again = world.write(apply_running, Move.running(job, runner, "r", later))
    assert again == transitions.Started(JobStatus.RUNNING, now, moved=False)
    assert _row(world, job.id).last_heartbeat == later
    assert world.write(apply_running, Move.running(job, runner + 1, "x", later)) is None
    assert [e for e, _, _ in _events(world, job.id)].count(JobEvent.STARTED) == 1


def test_a_move_s_line_holds_its_fields_and_none_left_empty(
    world: World, ctx: ServerContext, caplog: pytest.LogCaptureFixture
) -> None:
    runner, job = _claimed(world)
    running = Move.running(job, runner, "r", world.now())
    assert job.claimed is not None

    with caplog.at_level(logging.INFO, logger="benchrunner.transitions"):
        assert world.db.write_sync(apply_running, running) is not None
        Moves(ctx).done(running)

    (record,) = [r for r in caplog.records if r.name == "benchrunner.transitions"]
    line = json.loads(JsonFormatter().format(record))
    del line["timestamp"]
    duration = round((running.now - job.claimed).total_seconds() * 1000)
    assert line == {
        "event": "job running",
        "level": "info",
        "logger": "benchrunner.transitions",
        "job": str(job.uuid),
        "runner": "r",
        "status_from": "claimed",
        "status_to": "running",
        "duration_ms": duration,
        "tier": "team",
    }
    assert list(line)[3:5] == ["job", "runner"]
    assert not hasattr(record, "reason")
