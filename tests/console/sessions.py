"""A console session of the deployment's admin made in its database: for requests sent without
a browser (a forged form), which cannot go through the sign-in page's secure cookies."""

from __future__ import annotations

import datetime as dt

from sqlalchemy.engine import Connection

from benchrunner.core.clock import utcnow
from benchrunner.server.store import accounts
from benchrunner.server.store import sessions as session_store
from benchrunner.server.store.engine import Database
from tests.harness import Deployment


def admin_session(console: Deployment) -> str:
    """A new console session of the admin (the token its cookie carries)."""
    db = Database(console.server.db, read_threads=1)
    try:

        def unit(conn: Connection) -> str:
            user = accounts.user_by_api_token(conn, console.server.token, utcnow())
            assert user is not None
            return session_store.session_create(conn, user.id, utcnow(), dt.timedelta(hours=1))

        return db.write_sync(unit)
    finally:
        db.close()
