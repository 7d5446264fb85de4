"""How many jobs wait, for the submission caps: counted on the partial indexes of pending and
in-flight jobs, each count stopping at its cap, so that a submission reads at most as many
index entries as the caps allow however long the queue has grown."""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.server.store.direct import Direct
from benchrunner.server.store.tables import in_flight, job, pending


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
_BACKLOG = Direct(
    sa.select(
        (
            _count_up_to(_PENDING, "queued_cap")
            + _count_up_to(in_flight(job.c.status), "queued_cap")
        ).label("queued"),
        _count_up_to(
            sa.and_(_PENDING, job.c.organization_id == sa.bindparam("organization_id")), "org_cap"
        ).label("org_pending"),
    )
)


def backlog(conn: Connection, organization_id: int, queued_cap: int, org_cap: int) -> Backlog:
    """The counts, each stopping at its cap (a cap of 0 counts nothing)."""
    row = _BACKLOG.first(
        conn,
        {"organization_id": organization_id, "queued_cap": queued_cap, "org_cap": org_cap},
    )
    assert row is not None
    return Backlog(int(row.queued), int(row.org_pending))
