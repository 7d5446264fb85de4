"""The lookups cache on each engine: a repeated lookup costs no statement, a write that changes
a cached row drops it (and on PostgreSQL notifies every replica when it commits), a unit that
rolls back or raced an invalidation keeps nothing, and the cache is bounded in size and age."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql
from sqlalchemy.engine import Connection

from benchrunner.core.tiers import Plan
from benchrunner.server.store import accounts, lookups_cache
from benchrunner.server.store.engine import Database
from benchrunner.server.store.listen import libpq_url
from benchrunner.server.store.lookups_cache import LookupCache, cached, tag
from benchrunner.server.store.tables import api_token
from tests.databases import fresh_database, with_schema

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


@pytest.fixture
def db(migrated_db: Database) -> Iterator[Database]:
    """The store with its cache on, as a PostgreSQL replica's is while it listens."""
    migrated_db.lookups.enable()
    yield migrated_db


def _user_and_token(db: Database, *, expiration: dt.datetime | None = None) -> tuple[Any, str]:
    def unit(conn: Connection) -> tuple[Any, str]:
        user = accounts.user_get_or_create(conn, "ada@x", "ada", admin=False, now=T0)
        row, token = accounts.api_token_create(conn, user.id, "ci", T0, expiration=expiration)
        return row, token

    return db.write_sync(unit)


def test_a_repeated_token_lookup_is_answered_by_the_cache_until_the_token_is_revoked(
    db: Database,
) -> None:
    row, token = _user_and_token(db)
    user = db.read_sync(accounts.user_by_api_token, token, T0)
    assert user is not None
    # Revoked behind the store's back (no invalidation): the cache still answers.
    with db.write_engine.begin() as conn:
        conn.execute(api_token.update().where(api_token.c.uuid == row.uuid).values(revoked=T0))
    assert db.read_sync(accounts.user_by_api_token, token, T0) == user
    # Through the store, the revocation drops the entry.
    assert db.write_sync(accounts.api_token_revoke, user.id, row.uuid, T0)
    assert db.read_sync(accounts.user_by_api_token, token, T0) is None


def test_a_cached_token_is_refused_once_it_expires(db: Database) -> None:
    _, token = _user_and_token(db, expiration=T0 + dt.timedelta(hours=1))
    assert db.read_sync(accounts.user_by_api_token, token, T0) is not None
    assert db.read_sync(accounts.user_by_api_token, token, T0) is not None  # cached now
    assert db.read_sync(accounts.user_by_api_token, token, T0 + dt.timedelta(hours=2)) is None


def test_a_role_cached_as_none_is_dropped_when_the_user_joins(db: Database) -> None:
    def setup(conn: Connection) -> tuple[int, int]:
        user = accounts.user_get_or_create(conn, "eve@x", "eve", admin=False, now=T0)
        org = accounts.organization_create(conn, "acme", Plan.FREE, T0, leader_id=None)
        return user.id, org.id

    user_id, org_id = db.write_sync(setup)
    assert db.read_sync(accounts.role_of, user_id, org_id) is None
    assert db.read_sync(accounts.organization_is_claimed, org_id) is False
    assert db.write_sync(accounts.member_add, org_id, user_id, accounts.MEMBER, T0)
    assert db.read_sync(accounts.role_of, user_id, org_id) == accounts.MEMBER
    assert db.read_sync(accounts.organization_is_claimed, org_id) is True
    db.write_sync(accounts.member_remove, org_id, user_id)
    assert db.read_sync(accounts.role_of, user_id, org_id) is None


def test_a_unit_that_rolls_back_keeps_nothing(db: Database) -> None:
    _, token = _user_and_token(db)

    def failing(conn: Connection) -> None:
        assert accounts.user_by_api_token(conn, token, T0) is not None
        raise RuntimeError("rolled back")

    with pytest.raises(RuntimeError):
        db.read_sync(failing)
    assert len(db.lookups) == 0


def test_a_read_that_raced_an_invalidation_is_not_kept(db: Database) -> None:
    """A unit that began before a change committed may have read the old row: it is not
    stored, whether the change was made here or arrived from another replica."""
    _, token = _user_and_token(db)

    def racing(conn: Connection) -> None:
        assert accounts.user_by_api_token(conn, token, T0) is not None
        db.lookups.received("user:999")  # any invalidation meanwhile

    db.read_sync(racing)
    assert len(db.lookups) == 0
    db.read_sync(accounts.user_by_api_token, token, T0)
    assert len(db.lookups) == 1


def test_a_lost_listener_clears_the_cache_and_keeps_nothing_until_it_listens_again(
    db: Database,
) -> None:
    _, token = _user_and_token(db)
    db.read_sync(accounts.user_by_api_token, token, T0)
    assert len(db.lookups) == 1
    db.lookups.disable()
    assert len(db.lookups) == 0
    db.read_sync(accounts.user_by_api_token, token, T0)
    assert len(db.lookups) == 0
    db.lookups.enable()
    db.read_sync(accounts.user_by_api_token, token, T0)
    assert len(db.lookups) == 1


def test_a_notification_drops_the_entries_it_names(db: Database) -> None:
    _, token = _user_and_token(db)
    user = db.read_sync(accounts.user_by_api_token, token, T0)
    assert user is not None and len(db.lookups) == 1
    db.lookups.received(tag("user", user.id + 1))
    assert len(db.lookups) == 1
    db.lookups.received(f"{tag('org', 1)} {tag('user', user.id)}")
    assert len(db.lookups) == 0


def test_on_postgresql_a_change_is_notified_when_it_commits(tmp_path: Path) -> None:
    with fresh_database("postgresql", tmp_path) as url:
        with_schema(url)
        db = Database(url, read_threads=1)
        try:
            row, _ = _user_and_token(db)
            with psycopg.connect(libpq_url(db.url), autocommit=True) as listener:
                listener.execute(sql.SQL("LISTEN {}").format(sql.Identifier(lookups_cache.CHANNEL)))
                user = db.read_sync(lambda conn: accounts.user_by_email(conn, "ada@x"))
                assert user is not None

                def revoke_then_look(conn: Connection) -> None:
                    assert accounts.api_token_revoke(conn, user.id, row.uuid, T0)
                    # Not before the commit: another replica would read the old row again.
                    assert list(listener.notifies(timeout=0.2, stop_after=1)) == []

                db.write_sync(revoke_then_look)
                payloads = [n.payload for n in listener.notifies(timeout=10, stop_after=1)]
        finally:
            db.close()
    assert payloads == [tag("user", user.id)]


def _loaded(value: int) -> Any:
    return lambda: value


def test_the_cache_keeps_the_most_recently_used_entries_for_at_most_its_ttl(
    migrated_db: Database,
) -> None:
    now = [0.0]
    cache = LookupCache(max_entries=2, ttl=60.0, monotonic=lambda: now[0])
    engine = migrated_db.read_engine.execution_options(**{lookups_cache.OPTION: cache})

    def look(key: str, value: int) -> int | None:
        with engine.connect() as conn:
            cache.begin(conn)
            found = cached(conn, key, _loaded(value), lambda _: ["t"])
            cache.end(conn, committed=True)
        return found

    assert look("a", 1) == 1 and look("b", 2) == 2
    assert look("a", 10) == 1  # from the cache, and now the most recently used
    assert look("c", 3) == 3  # "b" goes: over the bound
    assert look("b", 20) == 20 and look("a", 100) == 100  # "a" went in turn
    now[0] = 61.0
    assert look("b", 200) == 200  # expired
