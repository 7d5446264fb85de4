"""Console sessions in the store, on both engines: found by their token until they expire or
are deleted, and swept once expired."""

from __future__ import annotations

import datetime as dt

from sqlalchemy.engine import Connection

from benchrunner.server.store import accounts, sessions
from benchrunner.server.store.engine import Database

NOW = dt.datetime(2026, 11, 25, 10, 0, tzinfo=dt.UTC)
HOUR = dt.timedelta(hours=1)


def _user(conn: Connection) -> int:
    return accounts.user_get_or_create(conn, "s@test.dev", "s", admin=False, now=NOW).id


def test_a_session_is_found_until_it_expires_or_is_deleted(migrated_db: Database) -> None:
    user_id = migrated_db.write_sync(_user)
    token = migrated_db.write_sync(sessions.session_create, user_id, NOW, HOUR)
    other = migrated_db.write_sync(sessions.session_create, user_id, NOW, HOUR)
    found = migrated_db.read_sync(sessions.session_user, token, NOW + HOUR / 2)
    assert found is not None and found.user.email == "s@test.dev"
    assert migrated_db.read_sync(sessions.session_user, token, NOW + HOUR) is None
    assert migrated_db.read_sync(sessions.session_user, token + "x", NOW) is None

    migrated_db.write_sync(sessions.session_delete, token)
    assert migrated_db.read_sync(sessions.session_user, token, NOW) is None
    assert migrated_db.read_sync(sessions.session_user, other, NOW) is not None


def test_expired_sessions_are_swept_and_live_ones_kept(migrated_db: Database) -> None:
    user_id = migrated_db.write_sync(_user)
    old = migrated_db.write_sync(sessions.session_create, user_id, NOW - 2 * HOUR, HOUR)
    live = migrated_db.write_sync(sessions.session_create, user_id, NOW, HOUR)
    assert migrated_db.write_sync(sessions.sessions_expired_delete, NOW) == 1
    assert migrated_db.read_sync(sessions.session_user, old, NOW - 2 * HOUR) is None
    assert migrated_db.read_sync(sessions.session_user, live, NOW) is not None
