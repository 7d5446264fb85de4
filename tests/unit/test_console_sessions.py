"""Console sessions in the store, on both engines: found by their token until they expire or
are deleted, and swept once expired."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import pytest
from sqlalchemy.engine import Connection

from benchrunner.server.store import accounts, sessions
from benchrunner.server.store.engine import Database
from benchrunner.server.store.migrate import upgrade

NOW = dt.datetime(2026, 11, 25, 10, 0, tzinfo=dt.UTC)
HOUR = dt.timedelta(hours=1)


@pytest.fixture
def db(database_url: str) -> Iterator[Database]:
    database = Database(database_url, read_threads=1)
    upgrade(database.write_engine)
    yield database
    database.close()


def _user(conn: Connection) -> int:
    return accounts.user_get_or_create(conn, "s@test.dev", "s", admin=False, now=NOW).id


def test_a_session_is_found_until_it_expires_or_is_deleted(db: Database) -> None:
    user_id = db.write_sync(_user)
    token = db.write_sync(sessions.session_create, user_id, NOW, HOUR)
    other = db.write_sync(sessions.session_create, user_id, NOW, HOUR)
    found = db.read_sync(sessions.session_user, token, NOW + HOUR / 2)
    assert found is not None and found.user.email == "s@test.dev"
    assert db.read_sync(sessions.session_user, token, NOW + HOUR) is None
    assert db.read_sync(sessions.session_user, token + "x", NOW) is None

    db.write_sync(sessions.session_delete, token)
    assert db.read_sync(sessions.session_user, token, NOW) is None
    assert db.read_sync(sessions.session_user, other, NOW) is not None


def test_expired_sessions_are_swept_and_live_ones_kept(db: Database) -> None:
    user_id = db.write_sync(_user)
    old = db.write_sync(sessions.session_create, user_id, NOW - 2 * HOUR, HOUR)
    live = db.write_sync(sessions.session_create, user_id, NOW, HOUR)
    assert db.write_sync(sessions.sessions_expired_delete, NOW) == 1
    assert db.read_sync(sessions.session_user, old, NOW - 2 * HOUR) is None
    assert db.read_sync(sessions.session_user, live, NOW) is not None
