"""A running job's live log as rows of ``job_log``: appended by offset, read in arrival order.

Each stream of a job is append-only. A chunk that starts at or before what is stored keeps only
its new bytes (a resend after a reconnect changes nothing); one that starts beyond records the
missing bytes as a ``gap`` row first, and nothing fills a gap later. Past the size limit a
single ``truncated`` row ends the stream. Only a job in flight gets new chunks.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.server.store.direct import Direct, insert_values
from benchrunner.server.store.tables import in_flight, job, job_log


class ChunkKind(enum.StrEnum):
    DATA = "data"
    GAP = "gap"
    TRUNCATED = "truncated"


class Appended(enum.StrEnum):
    STORED = "stored"
    DUPLICATE = "duplicate"
    AFTER_GAP = "after_gap"
    OVER_LIMIT = "over_limit"
    NOT_IN_FLIGHT = "not_in_flight"


@dataclass(frozen=True)
class LogChunk:
    id: int
    stream: str
    offset: int
    size: int
    kind: ChunkKind
    data: str | None


_STORED_END_IF_FLYING = Direct(
    sa.select(
        sa.select(job_log.c.stream_offset + job_log.c.size)
        .where(job_log.c.job_id == job.c.id, job_log.c.stream == sa.bindparam("stream"))
        .order_by(job_log.c.stream_offset.desc())
        .limit(1)
        .scalar_subquery()
        .label("stored_end")
    ).where(job.c.id == sa.bindparam("job_id"), in_flight(job.c.status))
)
"""Where the stream's stored bytes end (NULL: none stored), as a row only while the job is in
flight: the check and the read of every append in one statement. A stream's rows never overlap,
so the one at the highest offset ends it; found through the unique index on (job, stream,
offset) without reading the stream's other rows, as ``max(offset + size)`` would."""

_INSERT = Direct(
    insert_values(job_log, ["job_id", "stream", "stream_offset", "size", "kind", "data"])
)

_TRUNCATION_MARKER = Direct(
    sa.select(job_log.c.id).where(
        job_log.c.job_id == sa.bindparam("job_id"),
        job_log.c.stream == sa.bindparam("stream"),
        job_log.c.stream_offset == sa.bindparam("offset"),
    )
)


def _insert(
    conn: Connection,
    job_id: int,
    stream: str,
    offset: int,
    kind: ChunkKind,
    data: bytes | int,
) -> None:
    """A ``kind`` row at ``offset``: ``data``'s bytes, or for a marker the size it stands for."""
    text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else None
    size = len(data) if isinstance(data, bytes) else data
    _INSERT.run(
        conn,
        {
            "job_id": job_id,
            "stream": stream,
            "stream_offset": offset,
            "size": size,
            "kind": kind.value,
            "data": text,
        },
    )


def _truncate(conn: Connection, job_id: int, stream: str, max_bytes: int) -> Appended:
    marked = _TRUNCATION_MARKER.first(
        conn, {"job_id": job_id, "stream": stream, "offset": max_bytes}
    )
    if marked is None:
        _insert(conn, job_id, stream, max_bytes, ChunkKind.TRUNCATED, 0)
    return Appended.OVER_LIMIT


def job_log_append(
    conn: Connection, job_id: int, stream: str, offset: int, data: str, max_bytes: int
) -> Appended:
    """Store the bytes of ``data`` (at ``offset`` of ``stream``) that are not stored yet, up to
    ``max_bytes`` of the stream. Nothing is stored once the job has left claimed and running
    (a finished job's log never grows)."""
    stored = _STORED_END_IF_FLYING.first(conn, {"job_id": job_id, "stream": stream})
    if stored is None:
        return Appended.NOT_IN_FLIGHT
    raw = data.encode()
    end = int(stored.stored_end or 0)
    if offset + len(raw) <= end:
        return Appended.DUPLICATE
    if end >= max_bytes:
        return _truncate(conn, job_id, stream, max_bytes)
    outcome = Appended.STORED
    if offset > end:
        outcome = Appended.AFTER_GAP
        gap_end = min(offset, max_bytes)
        _insert(conn, job_id, stream, end, ChunkKind.GAP, gap_end - end)
        end = gap_end
    # A resend cut at another character boundary than the first send stays readable: the
    # stored text of its first bytes may hold a replacement character.
    new = raw[max(0, end - offset) : max(0, max_bytes - offset)]
    if new:
        _insert(conn, job_id, stream, end, ChunkKind.DATA, new)
    if offset + len(raw) > max_bytes:
        return _truncate(conn, job_id, stream, max_bytes)
    return outcome


def job_log_chunks(conn: Connection, job_id: int, after: int, limit: int) -> list[LogChunk]:
    """Up to ``limit`` chunks of the job's log stored after chunk id ``after``, in order."""
    rows = conn.execute(
        sa.select(job_log)
        .where(job_log.c.job_id == job_id, job_log.c.id > after)
        .order_by(job_log.c.id)
        .limit(limit)
    )
    return [
        LogChunk(
            id=row.id,
            stream=row.stream,
            offset=row.stream_offset,
            size=row.size,
            kind=ChunkKind(row.kind),
            data=row.data,
        )
        for row in rows
    ]
