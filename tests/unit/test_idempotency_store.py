"""Idempotency keys and backlog counts on a real database: who holds a key, when it expires,
and counts that stop at their caps."""

from __future__ import annotations

import datetime as dt

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.core.states import JobStatus
from benchrunner.core.tiers import Plan
from benchrunner.server.store import idempotency, reports
from benchrunner.server.store.backlog import Caps, backlog
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
