"""Console test users: created through ``POST /v0/users`` with a password, made members of an
organization in the database (the API has no membership endpoint yet)."""

from __future__ import annotations

from sqlalchemy.engine import Connection

from benchrunner.core.clock import utcnow
from benchrunner.server.store import accounts
from benchrunner.server.store.engine import Database
from benchrunner.server.store.tables import organization_role
from tests.harness import Deployment


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
            found = accounts.organization_get(conn, org)
            assert user is not None and found is not None
            conn.execute(
                organization_role.insert().values(
                    user_id=user[0].id, organization_id=found.id, role="member", created=utcnow()
                )
            )

        db.write_sync(unit)
    finally:
        db.close()
