"""``benchrunner admin bootstrap``: the scripted way in — an admin and a fresh API token."""

from __future__ import annotations

from sqlalchemy.engine import Connection

from benchrunner.core import passwords
from benchrunner.core.clock import utcnow
from benchrunner.server.store import accounts
from benchrunner.server.store.engine import Database
from benchrunner.server.store.migrate import upgrade


def bootstrap_admin(
    db_url: str, email: str, name: str | None = None, *, password: str | None = None
) -> str:
    """Create (or find) a server admin with this email and return a new API token for it;
    ``password`` (checked by :func:`passwords.check_new`) becomes the admin's console password."""
    password_hash = None if password is None else passwords.hash_password(password)
    db = Database(db_url, read_threads=1)
    try:
        upgrade(db.write_engine)

        def unit(conn: Connection) -> str:
            now = utcnow()
            user = accounts.user_get_or_create(
                conn, email, name or email.split("@")[0], admin=True, now=now
            )
            if password_hash is not None:
                accounts.user_set_password(conn, user.id, password_hash, now)
            return accounts.api_token_issue(conn, user.id, "bootstrap", now)

        return db.write_sync(unit)
    finally:
        db.close()
