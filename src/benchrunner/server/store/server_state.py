"""Values every replica must agree on (``server_state``): the first writer's value wins."""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.server.store.conflicts import insert_or_skip
from benchrunner.server.store.tables import server_state


def server_state_get(conn: Connection, name: str) -> str | None:
    return conn.execute(
        sa.select(server_state.c.value).where(server_state.c.name == name)
    ).scalar_one_or_none()


def server_state_get_or_set(conn: Connection, name: str, value: str, now: dt.datetime) -> str:
    """The value of ``name``: the one stored, else ``value``, stored now. Servers racing to store
    theirs all get the one that went in first (``INSERT … ON CONFLICT DO NOTHING``)."""
    conn.execute(
        insert_or_skip(conn, server_state, ("name",)),
        {"name": name, "value": value, "created": now},
    )
    stored = server_state_get(conn, name)
    assert stored is not None  # inserted, or kept by the conflicting row
    return stored
