"""Console test users: created through ``POST /v0/users`` with a password, made members of an
organization in the database (the API has no membership endpoint yet)."""

from __future__ import annotations

from sqlalchemy.engine import Connection

from benchrunner.server.store import accounts
from benchrunner.server.store.engine import Database
from tests.harness import Deployment
from tests.memberships import add_member


def create_member(console: Deployment, email: str, password: str, org: str | None) -> None:
    """A non-admin user who signs in with ``password``, a member of ``org`` if given."""
    with console.admin() as client:
        client.create_user(email.split("@")[0], email, password=password)
    if org is None:
        return
    db = Database(console.server.db, read_threads=1)
    try:

        def unit(conn: Connection) -> None:
            user = accounts.user_with_password_hash(conn, email)
            assert user is not None
            add_member(conn, user[0].id, org)

        db.write_sync(unit)
    finally:
        db.close()
