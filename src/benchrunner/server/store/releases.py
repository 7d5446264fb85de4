"""Runner releases (docs/decisions/runner-releases.md): the wheels runners update themselves to, per
update channel."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from uuid import UUID, uuid4

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.server.store.conflicts import insert_or_skip
from benchrunner.server.store.tables import runner_release


@dataclass(frozen=True)
class ReleaseRow:
    id: int
    uuid: UUID
    channel: str
    version: str
    checksum: str
    """SHA-256 of the wheel, lowercase hex."""
    filename: str
    size: int
    created: dt.datetime


@dataclass(frozen=True)
class NewRelease:
    channel: str
    version: str
    checksum: str
    filename: str
    size: int


def _row(row: sa.Row[tuple[object, ...]]) -> ReleaseRow:
    return ReleaseRow(**row._mapping)


def release_insert(conn: Connection, new: NewRelease, now: dt.datetime) -> ReleaseRow | None:
    """The new release, or None when its channel already has that version."""
    inserted = conn.execute(
        insert_or_skip(conn, runner_release, ("channel", "version")).returning(runner_release),
        {"uuid": uuid4(), "created": now, **new.__dict__},
    ).first()
    return None if inserted is None else _row(inserted)


def release_latest(conn: Connection, channel: str) -> ReleaseRow | None:
    """The channel's newest release: the one its runners converge on."""
    row = conn.execute(
        sa.select(runner_release)
        .where(runner_release.c.channel == channel)
        .order_by(runner_release.c.created.desc(), runner_release.c.id.desc())
        .limit(1)
    ).first()
    return None if row is None else _row(row)


def release_get(conn: Connection, release_uuid: UUID) -> ReleaseRow | None:
    row = conn.execute(
        sa.select(runner_release).where(runner_release.c.uuid == release_uuid)
    ).first()
    return None if row is None else _row(row)


def release_list(conn: Connection, channel: str | None = None) -> list[ReleaseRow]:
    """Newest first."""
    query = sa.select(runner_release).order_by(
        runner_release.c.created.desc(), runner_release.c.id.desc()
    )
    if channel is not None:
        query = query.where(runner_release.c.channel == channel)
    return [_row(r) for r in conn.execute(query)]
