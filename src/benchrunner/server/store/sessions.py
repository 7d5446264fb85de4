"""Console sessions: created at sign-in, found by the SHA-256 of the cookie's token, deleted at
sign-out (which revokes them on every replica at once)."""

from __future__ import annotations

import datetime as dt
import secrets
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.core.tokens import hash_token
from benchrunner.server.store.accounts import UserRow, user_from_row
from benchrunner.server.store.direct import Direct
from benchrunner.server.store.tables import console_session, user

SESSION_TOKEN_BYTES = 32
SESSION_COOKIE = "benchrunner_session"


@dataclass(frozen=True)
class SessionUser:
    session_id: int
    user: UserRow


def session_create(conn: Connection, user_id: int, now: dt.datetime, lifetime: dt.timedelta) -> str:
    """A new session for the user; returns its token (stored only as a hash) once."""
    token = secrets.token_urlsafe(SESSION_TOKEN_BYTES)
    conn.execute(
        console_session.insert().values(
            token_hash=hash_token(token), user_id=user_id, created=now, expires=now + lifetime
        )
    )
    return token


_SESSION_USER = Direct(
    sa.select(user, console_session.c.id.label("session_id"))
    .join(console_session, console_session.c.user_id == user.c.id)
    .where(
        console_session.c.token_hash == sa.bindparam("token_hash"),
        console_session.c.expires > sa.bindparam("now"),
    )
)


def session_user(conn: Connection, token: str, now: dt.datetime) -> SessionUser | None:
    """The user signed in by this session token, or None if it is unknown or expired."""
    row = _SESSION_USER.first(conn, {"token_hash": hash_token(token), "now": now})
    return SessionUser(row.session_id, user_from_row(row)) if row else None


def session_delete(conn: Connection, token: str) -> None:
    conn.execute(console_session.delete().where(console_session.c.token_hash == hash_token(token)))


def sessions_expired_delete(conn: Connection, now: dt.datetime) -> int:
    """Remove the sessions past their expiry; returns how many."""
    result = conn.execute(console_session.delete().where(console_session.c.expires <= now))
    return result.rowcount
