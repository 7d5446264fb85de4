"""Signing a browser in as the deployment's admin, for pages that need a signed-in viewer."""

from __future__ import annotations

import datetime as dt

from playwright.sync_api import Page
from sqlalchemy.engine import Connection

from benchrunner.core.clock import utcnow
from benchrunner.server.console import sessions
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


def sign_in(page: Page, console: Deployment) -> None:
    page.context.add_cookies(
        [
            {
                "name": sessions.COOKIE,
                "value": admin_session(console),
                "url": console.server.url,
                "httpOnly": True,
                "secure": True,
                "sameSite": "Lax",
            }
        ]
    )
