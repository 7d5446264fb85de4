"""Organization membership for test users, written to the database directly (no admin token
needed); ``POST /v0/organizations/{organization}/members`` is tested in
tests/system/test_accounts.py."""

from __future__ import annotations

import datetime as dt

from sqlalchemy.engine import Connection

from benchrunner.core.clock import utcnow
from benchrunner.server.store import accounts
from benchrunner.server.store.tables import organization_role


def add_member(conn: Connection, user_id: int, org: str, now: dt.datetime | None = None) -> None:
    """Make user ``user_id`` a member of organization ``org`` (its slug or uuid)."""
    found = accounts.organization_get(conn, org)
    assert found is not None, f"no organization {org!r}"
    conn.execute(
        organization_role.insert().values(
            user_id=user_id, organization_id=found.id, role="member", created=now or utcnow()
        )
    )
