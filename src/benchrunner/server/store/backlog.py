"""How many jobs wait, for the submission caps: counted on the partial indexes of pending and
in-flight jobs, each count stopping at its cap, so that a submission reads at most as many
index entries as the caps allow however long the queue has grown.

A submission counts pending jobs only when it must. They are a subset of the ids between the
oldest and the newest pending one, so that span, read from the two ends of an index of pending
ids, bounds their number from above: while it stays under a cap there is room, whatever the
queue's depth, at the cost of a few index probes. Only a span that reaches a cap (a queue near
it, or one with many holes, such as jobs claimed ahead of older ones by priority) is counted.
In-flight jobs, at most one per runner, are counted up to the server's cap either way."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.server.store.direct import Direct
from benchrunner.server.store.tables import (
    ORG_PENDING_ORDER,
    PENDING_ORDER,
    in_flight,
    job,
    pending,
)


@dataclass(frozen=True)
class Backlog:
    queued: int
    """Pending plus in-flight jobs of the whole server, counted up to the server's cap (each
    of the two up to it)."""
    org_pending: int
    """Pending jobs of the organization, counted up to its cap."""


def _count_up_to(condition: sa.ColumnElement[bool], cap: str) -> sa.ScalarSelect[int]:
    # SQLite reads a partial index only when the query repeats its WHERE term with literals.
    upto = sa.select(sa.literal_column("1")).where(condition).limit(sa.bindparam(cap)).subquery()
    return sa.select(sa.func.count()).select_from(upto).scalar_subquery()


_PENDING = pending(job.c.status)
_QUEUED = _count_up_to(_PENDING, "queued_cap") + _count_up_to(in_flight(job.c.status), "queued_cap")
_ORG_PENDING = _count_up_to(
    sa.and_(_PENDING, job.c.organization_id == sa.bindparam("organization_id")), "org_cap"
)
_BACKLOG = Direct(sa.select(_QUEUED.label("queued"), _ORG_PENDING.label("org_pending")))


def _pending_span(
    order: sa.ColumnElement[int], *also: sa.ColumnElement[bool]
) -> sa.ColumnElement[int]:
    """Newest pending id - oldest + 1 (0: none pending), at least the number of pending jobs;
    each end one probe of the index ``order`` names (one aggregate per query, as SQLite reads
    a min or max from an index only so)."""
    newest = sa.select(sa.func.max(order)).where(_PENDING, *also).scalar_subquery()
    oldest = sa.select(sa.func.min(order)).where(_PENDING, *also).scalar_subquery()
    return sa.func.coalesce(newest - oldest + 1, 0)


_QUEUED_AT_MOST = _pending_span(PENDING_ORDER) + _count_up_to(in_flight(job.c.status), "queued_cap")
_ORG_PENDING_AT_MOST = _pending_span(
    ORG_PENDING_ORDER, job.c.organization_id == sa.bindparam("organization_id")
)


def _room(
    at_most: sa.ColumnElement[int], count: sa.ColumnElement[int], cap: str
) -> sa.ColumnElement[bool]:
    """The cap is off, or the bound leaves room, or (read only then: both engines stop at the
    first true term of an ``OR``) the count does."""
    bound = sa.bindparam(cap, type_=sa.Integer)
    return sa.or_(bound == 0, at_most < bound, count < bound)


ROOM_FOR_ONE = sa.and_(
    _room(_QUEUED_AT_MOST, _QUEUED, "queued_cap"),
    _room(_ORG_PENDING_AT_MOST, _ORG_PENDING, "org_cap"),
)
"""True when one more pending job passes no cap, counted as ``backlog`` counts (a cap of 0 is
off), for a statement that writes a job only then; its parameters are ``Caps.params``'."""

_ROOM = Direct(sa.select(sa.case((ROOM_FOR_ONE, 1), else_=0).label("room")))


@dataclass(frozen=True)
class Caps:
    """The caps a new job of an organization must stay within (0: that cap is off)."""

    organization_id: int
    queued: int
    org_pending: int

    def params(self) -> dict[str, int]:
        """The parameters of ``backlog``'s count and of ``ROOM_FOR_ONE``."""
        return {
            "organization_id": self.organization_id,
            "queued_cap": self.queued,
            "org_cap": self.org_pending,
        }

    def full_cap(self, counts: Backlog) -> Literal["queued", "org"] | None:
        """The cap ``counts`` leave no room under for one more pending job (the server's first),
        or None: the rule ``ROOM_FOR_ONE`` writes in SQL."""
        if self.queued and counts.queued >= self.queued:
            return "queued"
        if self.org_pending and counts.org_pending >= self.org_pending:
            return "org"
        return None


def backlog(conn: Connection, caps: Caps) -> Backlog:
    """The counts, each stopping at its cap (a cap of 0 counts nothing)."""
    row = _BACKLOG.first(conn, caps.params())
    assert row is not None
    return Backlog(int(row.queued), int(row.org_pending))


def room_for_one(conn: Connection, caps: Caps) -> bool:
    """Whether one more pending job passes every cap (``ROOM_FOR_ONE``)."""
    return bool(_ROOM.scalar(conn, caps.params()))
