"""The fallback spec: the one an image job submitted without a spec runs on (Bencher's
``JsonSpec.fallback``). An admin marks it; marking one unmarks any other, so at most one is
marked at a time."""

from __future__ import annotations

import datetime as dt
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.server.store.tables import spec


def fallback_spec(conn: Connection) -> Any | None:
    """The marked spec if it is not archived, else None."""
    query = sa.select(spec).where(spec.c.fallback.is_not(None), spec.c.archived.is_(None))
    return conn.execute(query.order_by(spec.c.fallback.desc()).limit(1)).first()


def fallback_mark(conn: Connection, spec_id: int, now: dt.datetime) -> None:
    """Make ``spec_id`` the fallback spec (keeping its mark time if it already is)."""
    conn.execute(
        spec.update()
        .where(spec.c.id != spec_id, spec.c.fallback.is_not(None))
        .values(fallback=None, modified=now)
    )
    conn.execute(
        spec.update()
        .where(spec.c.id == spec_id, spec.c.fallback.is_(None))
        .values(fallback=now, modified=now)
    )


def fallback_unmark(conn: Connection, spec_id: int, now: dt.datetime) -> None:
    conn.execute(
        spec.update()
        .where(spec.c.id == spec_id, spec.c.fallback.is_not(None))
        .values(fallback=None, modified=now)
    )
