"""Idempotency keys and backlog counts on a real database: who holds a key, when it expires,
and counts that stop at their caps."""

from __future__ import annotations

import datetime as dt
import re
import uuid

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.sql.compiler import SQLCompiler

from benchrunner.core.states import JobStatus
from benchrunner.core.tiers import Plan
from benchrunner.server.store import backlog as backlog_counts
from benchrunner.server.store import idempotency, reports
from benchrunner.server.store.backlog import Caps, backlog, room_for_one
from benchrunner.server.store.engine import Database
from benchrunner.server.store.idempotency import KeyRef
from benchrunner.server.store.tables import idempotency_key, job
from tests.new_reports import new_report_on
from tests.unit.test_claim_policy import World

T0 = dt.datetime(2026, 11, 25, 8, 0, tzinfo=dt.UTC)
WINDOW = dt.timedelta(minutes=5)
KEY = KeyRef("user:1", "ci-42")


def _report(world: World) -> int:
    _, project_id = world.org("acme", Plan.TEAM)

    def unit(conn: Connection) -> int:
        new = new_report_on(conn, project_id, "main", "tb", "json", T0)
        return reports.report_create(conn, new)[0]

    return world.write(unit)


def _claim(db: Database, payload: str, at: dt.datetime) -> idempotency.HeldKey | None:
    return db.write_sync(idempotency.key_claim, KEY, payload, at, at - WINDOW)


def test_a_key_is_held_for_its_window_then_replaced(world: World) -> None:
    db = world.db
    report_id = _report(world)
    assert _claim(db, "hash-a", T0) is None  # new: this submission holds it
    db.write_sync(idempotency.key_bind, KEY, report_id)

    held = _claim(db, "hash-b", T0 + WINDOW - dt.timedelta(seconds=1))
    assert held == idempotency.HeldKey("hash-a", report_id, T0)
    # Another owner's key of the same name is another key.
    other = KeyRef("ip:10.0.0.1", KEY.key)
    assert db.write_sync(idempotency.key_claim, other, "hash-b", T0, T0 - WINDOW) is None

    # Past the window the key is this submission's again, with its own payload.
    later = T0 + WINDOW + dt.timedelta(seconds=1)
    assert _claim(db, "hash-b", later) is None
    assert _claim(db, "hash-a", later) == idempotency.HeldKey("hash-b", None, later)


def test_expired_keys_are_deleted_and_a_rolled_back_claim_leaves_nothing(world: World) -> None:
    db = world.db
    assert _claim(db, "hash-a", T0) is None
    assert db.write_sync(idempotency.keys_expire, T0) == 0
    assert db.write_sync(idempotency.keys_expire, T0 + dt.timedelta(seconds=1)) == 1

    class Refused(Exception):
        pass

    def refused_submission(conn: Connection) -> None:
        idempotency.key_claim(conn, KEY, "hash-a", T0, T0 - WINDOW)
        raise Refused

    with pytest.raises(Refused):
        db.write_sync(refused_submission)
    count = sa.select(sa.func.count()).select_from(idempotency_key)
    assert db.read_sync(lambda conn: conn.execute(count).scalar_one()) == 0


def test_backlog_counts_stop_at_their_caps(world: World) -> None:
    spec = world.spec("s")
    runner = world.runner("r", [spec])
    acme, other = world.org("acme", Plan.TEAM), world.org("other", Plan.TEAM)
    for _ in range(3):
        world.job(acme, spec)
    world.job(other, spec)
    assert world.claim(runner) is not None  # one of the four in flight

    def counts(org: int, queued_cap: int, org_cap: int) -> tuple[int, int]:
        found = world.db.read_sync(backlog, Caps(org, queued_cap, org_cap))
        return found.queued, found.org_pending

    def pending(org: int) -> int:
        query = sa.select(sa.func.count()).where(
            job.c.organization_id == org, job.c.status == int(JobStatus.PENDING)
        )
        return int(world.db.read_sync(lambda conn: conn.execute(query).scalar_one()))

    assert counts(acme[0], 100, 100) == (4, pending(acme[0]))
    assert counts(other[0], 100, 100) == (4, pending(other[0]))
    assert pending(acme[0]) + pending(other[0]) == 3
    assert counts(acme[0], 2, 1) == (3, 1)  # pending up to 2 plus in flight up to 2; org up to 1
    assert counts(acme[0], 0, 0) == (0, 0)


def test_room_for_one_agrees_with_the_counts_whatever_the_span_of_pending_ids(
    world: World,
) -> None:
    """``room_for_one`` reads the span of pending ids first and counts only when the span
    reaches a cap: jobs that left the queue from its middle make the span larger than the
    count, and the answer must still be the counts' (``Caps.full_cap``)."""
    spec = world.spec("s")
    runner = world.runner("r", [spec])
    acme, other = world.org("acme", Plan.TEAM), world.org("other", Plan.TEAM)
    ids = [world.job(acme, spec) for _ in range(4)] + [world.job(other, spec)]

    def agree(queued_cap: int, org_cap: int) -> bool:
        caps = Caps(acme[0], queued_cap, org_cap)
        room = bool(world.db.read_sync(room_for_one, caps))
        assert room == (caps.full_cap(world.db.read_sync(backlog, caps)) is None), caps
        return room

    assert agree(6, 5) and not agree(5, 5) and not agree(0, 4) and agree(0, 0)

    def leave_the_queue(conn: Connection, job_ids: list[int]) -> None:
        done = job.update().where(job.c.id.in_(job_ids)).values(status=int(JobStatus.CANCELED))
        conn.execute(done)

    world.write(leave_the_queue, ids[1:3])
    assert agree(4, 0) and not agree(3, 0)  # a span of 5 ids reaches 4: 3 pending, counted
    assert agree(0, 3) and not agree(0, 2)  # acme's span of 4 ids reaches 3: 2 pending
    assert world.claim(runner) == ids[0]
    assert agree(4, 0) and not agree(3, 0)  # a span of 2 ids, and 1 job in flight
    world.write(leave_the_queue, [ids[3]])
    assert agree(3, 0) and not agree(2, 0) and agree(0, 1)


def test_room_for_one_reads_the_ends_of_the_pending_ids_and_counts_nothing(world: World) -> None:
    """Under its caps a submission reads the two ends of each index of pending ids, never an
    end through the primary key past every finished job, nor an organization's through the
    server's index past other organizations' pending jobs, and counts no job: an
    organization that holds most of a table's history, another with most of its queue."""
    spec = world.spec("s")
    acme, other = world.org("acme", Plan.TEAM), world.org("other", Plan.TEAM)
    acme_job, other_job = world.job(acme, spec), world.job(other, spec)

    def fill(conn: Connection) -> None:
        rows = [dict(r._mapping) for r in conn.execute(sa.select(job))]
        template = {row["id"]: {k: v for k, v in row.items() if k != "id"} for row in rows}

        def copies(job_id: int, count: int, status: JobStatus) -> list[dict[str, object]]:
            return [
                {**template[job_id], "uuid": uuid.uuid4(), "status": int(status)}
                for _ in range(count)
            ]

        conn.execute(job.insert(), copies(acme_job, 3000, JobStatus.PROCESSED))
        conn.execute(job.insert(), copies(other_job, 1500, JobStatus.PENDING))
        conn.execute(job.insert(), copies(acme_job, 30, JobStatus.PENDING))

    world.write(fill)
    dialect = world.db.write_engine.dialect
    postgresql = dialect.name == "postgresql"
    if postgresql:
        world.db.write_sync(lambda conn: conn.exec_driver_sql("ANALYZE job"))
    compiled = backlog_counts._ROOM.statement.compile(dialect=dialect)
    assert isinstance(compiled, SQLCompiler)
    params = compiled.construct_params(Caps(acme[0], 100_000, 100_000).params())
    order = compiled.positiontup  # SQLite's placeholders are positional
    bound = params if order is None else tuple(params[name] for name in order)
    explain = "EXPLAIN (ANALYZE, COSTS OFF) " if postgresql else "EXPLAIN QUERY PLAN "

    def unit(conn: Connection) -> str:
        rows = conn.exec_driver_sql(explain + compiled.string, bound)
        return "\n".join(" ".join(str(part) for part in row) for row in rows)

    plan = world.db.read_sync(unit)

    def room(queued_cap: int, org_cap: int) -> bool:
        return world.db.read_sync(backlog_counts.room_for_one, Caps(acme[0], queued_cap, org_cap))

    assert room(1600, 32) and not room(1600, 31) and not room(1532, 0)  # 31 of acme, 1,532 in all
    if postgresql:
        ends = re.findall(r"Index Scan(?: Backward)? using (\w+) on job", plan)
        spans = [name for name in ends if name != "index_job_runner_in_flight"]
        assert spans == ["index_job_pending_id"] * 2 + ["index_job_org_pending"] * 2, plan
        assert plan.count("Limit") >= 4 and "Rows Removed" not in plan, plan
        assert plan.count("never executed") >= 3, plan  # the counts' subplans
    else:  # SQLite's plan does not say what ran, only what each subquery reads
        searches = [line for line in plan.splitlines() if " job " in line]
        assert all("USING" in line and "SCAN job" not in line for line in searches), plan
        assert sum("index_job_pending_id (status=?)" in line for line in searches) >= 2, plan
        assert (
            sum(
                "index_job_org_pending (status=? AND organization_id=?)" in line
                for line in searches
            )
            >= 2
        ), plan
