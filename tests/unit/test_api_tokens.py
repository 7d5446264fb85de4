"""API tokens in the store of each engine: shown once, kept as a hash, refused once expired or
revoked, listed apart once revoked."""

from __future__ import annotations

import datetime as dt

from benchrunner.core.tokens import hash_token
from benchrunner.server.store import accounts
from benchrunner.server.store.engine import Database

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def _user(db: Database, name: str) -> accounts.UserRow:
    return db.write_sync(
        lambda conn: accounts.user_get_or_create(conn, f"{name}@x", name, admin=False, now=T0)
    )


def test_expired_and_revoked_tokens_authenticate_no_one(migrated_db: Database) -> None:
    db = migrated_db
    ada = _user(db, "ada")
    later = T0 + dt.timedelta(hours=1)

    def create(name: str, expiration: dt.datetime | None) -> tuple[accounts.TokenRow, str]:
        return db.write_sync(
            lambda conn: accounts.api_token_create(conn, ada.id, name, T0, expiration=expiration)
        )

    (short, short_token), (lasting, lasting_token) = create("short", later), create("ci", None)
    assert short_token != lasting_token and short.user_uuid == ada.uuid
    for token in (short_token, lasting_token):
        found = db.read_sync(accounts.user_by_api_token, token, T0)
        assert found is not None and found.id == ada.id
    assert db.read_sync(accounts.user_by_api_token, short_token, later) is None  # expired

    assert db.write_sync(accounts.api_token_revoke, ada.id, lasting.uuid, later)
    assert db.read_sync(accounts.user_by_api_token, lasting_token, later) is None
    # Revoking again keeps the first revocation's time.
    even_later = later + dt.timedelta(hours=1)
    assert db.write_sync(accounts.api_token_revoke, ada.id, lasting.uuid, even_later)
    revoked = db.read_sync(accounts.api_token_get, ada.id, lasting.uuid)
    assert revoked is not None and revoked.revoked == later

    def listed(revoked: bool) -> list[accounts.TokenRow]:
        return db.read_sync(lambda conn: accounts.api_token_list(conn, ada.id, revoked=revoked))

    assert [t.name for t in listed(False)] == ["short"]
    assert [t.uuid for t in listed(True)] == [lasting.uuid]


def test_a_user_revokes_only_their_own_tokens(migrated_db: Database) -> None:
    db = migrated_db
    ada, eve = _user(db, "ada"), _user(db, "eve")
    token_row, token = db.write_sync(
        lambda conn: accounts.api_token_create(conn, ada.id, "ada's", T0)
    )
    assert not db.write_sync(accounts.api_token_revoke, eve.id, token_row.uuid, T0)
    assert db.read_sync(accounts.api_token_get, eve.id, token_row.uuid) is None
    assert db.read_sync(accounts.user_by_api_token, token, T0) is not None
    assert hash_token(token) != token
