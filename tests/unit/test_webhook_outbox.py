"""The webhook outbox in the store, on both engines: a delivery commits or rolls back with the
event that wrote it, and on PostgreSQL a claim skips the rows another replica's open claim holds
and leaves claimed rows alone until their lease ends (docs/how-to/thresholds-alerts.md)."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Connection

from benchrunner.core.tiers import Plan
from benchrunner.server.store import accounts, webhooks
from benchrunner.server.store.engine import Database
from tests.databases import fresh_database, with_schema

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
LEASE = dt.timedelta(seconds=40)


class Rollback(Exception):
    pass


def _project(conn: Connection) -> int:
    leader = accounts.user_get_or_create(conn, "lead@test.dev", "lead", admin=False, now=T0).id
    org = accounts.organization_create(conn, "org", Plan.TEAM, T0, leader_id=leader)
    return accounts.project_create(conn, org.id, "proj", "public", T0).id


def _body(hook: Any, delivery: uuid.UUID) -> str:
    return f'{{"delivery": "{delivery}"}}'


def _setup(db: Database) -> int:
    with db.write_engine.begin() as conn:
        project_id = _project(conn)
        webhooks.webhook_add(
            conn, project_id, "http://127.0.0.1:9/a", ["alert.raised"], "json", "k" * 16, T0
        )
        webhooks.webhook_add(
            conn, project_id, "http://127.0.0.1:9/b", ["alert.dismissed"], "slack", "k" * 16, T0
        )
    return project_id


def test_a_delivery_commits_or_rolls_back_with_its_event(migrated_db: Database) -> None:
    project_id = _setup(migrated_db)
    with pytest.raises(Rollback), migrated_db.write_engine.begin() as conn:
        assert webhooks.outbox_add(conn, project_id, "alert.raised", _body, T0) == 1
        raise Rollback  # the event's transaction fails after its delivery was written
    with migrated_db.write_engine.begin() as conn:
        assert webhooks.deliveries_claim(conn, T0, LEASE, 10) == []
        # Only the webhook that asked for the event gets a delivery.
        assert webhooks.outbox_add(conn, project_id, "alert.raised", _body, T0) == 1
    with migrated_db.write_engine.begin() as conn:
        assert not webhooks.deliveries_due(conn, T0 - LEASE)
        assert webhooks.deliveries_due(conn, T0)
        claimed = webhooks.deliveries_claim(conn, T0, LEASE, 10)
    assert [c.url for c in claimed] == ["http://127.0.0.1:9/a"]
    assert claimed[0].attempts == 1 and claimed[0].body == _body(None, claimed[0].uuid)
    with migrated_db.write_engine.begin() as conn:  # claimed: not due again within its lease
        assert webhooks.deliveries_claim(conn, T0 + LEASE / 2, LEASE, 10) == []
        again = webhooks.deliveries_claim(conn, T0 + LEASE, LEASE, 10)
    assert [c.id for c in again] == [claimed[0].id] and again[0].attempts == 2
    with migrated_db.write_engine.begin() as conn:
        # The first claim's attempt, outliving its lease, changes nothing but its own record.
        webhooks.attempt_record(
            conn, claimed[0].id, 1, T0, None, "timed out", 9.0, "pending", T0, T0 + LEASE
        )
        assert webhooks.deliveries_claim(conn, T0 + LEASE, LEASE, 10) == []  # still leased
        webhooks.attempt_record(
            conn, again[0].id, 2, T0, 200, None, 5.0, "delivered", T0 + LEASE, T0 + LEASE
        )
        webhooks.attempt_record(  # and one after the delivery finished cannot reopen it
            conn, again[0].id, 2, T0, None, "late", 9.0, "pending", T0, T0 + LEASE
        )
        assert webhooks.deliveries_claim(conn, T0 + 10 * LEASE, LEASE, 10) == []
        assert not webhooks.deliveries_due(conn, T0 + 10 * LEASE)
        assert webhooks.deliveries_expire(conn, T0 + LEASE) == 0  # finished just then: kept
        assert webhooks.deliveries_expire(conn, T0 + 2 * LEASE) == 1


@pytest.fixture
def postgresql_db(tmp_path: Path) -> Iterator[Database]:
    """PostgreSQL alone: SQLite has one writer, so a second claim waits for the first."""
    with fresh_database("postgresql", tmp_path) as url:
        with_schema(url)
        database = Database(url, read_threads=1)
        yield database
        database.close()


def test_replicas_never_claim_the_same_delivery(postgresql_db: Database) -> None:
    migrated_db = postgresql_db
    project_id = _setup(migrated_db)
    with migrated_db.write_engine.begin() as conn:
        for _ in range(3):
            webhooks.outbox_add(conn, project_id, "alert.raised", _body, T0)
    with migrated_db.write_engine.connect() as first, migrated_db.write_engine.connect() as other:
        with first.begin():
            held = webhooks.deliveries_claim(first, T0, LEASE, 2)
            with other.begin():  # while the first claim is open, its rows are skipped
                rest = webhooks.deliveries_claim(other, T0, LEASE, 10)
        assert len(held) == 2 and len(rest) == 1
        assert not {c.id for c in held} & {c.id for c in rest}


def test_any_webhook_tells_whether_one_exists(migrated_db: Database) -> None:
    with migrated_db.write_engine.begin() as conn:
        assert not webhooks.any_webhook(conn)  # what emitting checks before reading any alert
    _setup(migrated_db)
    with migrated_db.write_engine.begin() as conn:
        assert webhooks.any_webhook(conn)
