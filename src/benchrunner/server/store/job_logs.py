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

from benchrunner.server.store.arrays import unnested
from benchrunner.server.store.direct import Direct, insert_values
from benchrunner.server.store.tables import in_flight, job, job_log


class ChunkKind(enum.StrEnum):
    DATA = "data"
    GAP = "gap"
    TRUNCATED = "truncated"


@dataclass(frozen=True)
class LogChunk:
    id: int
    stream: str
    offset: int
    size: int
    kind: ChunkKind
    data: str | None


STREAMS = ("stdout", "stderr")


@dataclass
class PendingChunk:
    """A chunk as received, waiting to be stored: ``raw`` holds its bytes below the size limit
    (the rest is never stored), ``end`` is where the whole chunk ends."""

    stream: str
    offset: int
    raw: bytes
    end: int


@dataclass
class LogTail:
    """A job's last pending chunks, stored with the move that ends the job
    (``moves.move.Move.log``): in the move's own statement where the engine writes in CTEs
    (``tail_after``), else ahead of it in its transaction (``job_log_store_tail``). No
    transaction of their own, and a reader who sees the job finished sees its whole log."""

    job_id: int
    chunks: list[PendingChunk]
    max_bytes: int
    stored: bool | None = None
    """None until a move's transaction tried; then whether the job was in flight there, so
    that the chunks were stored (False: the sender is told they were refused)."""


@dataclass(frozen=True)
class Flushed:
    """What became of a job's pending chunks: nothing is stored unless the job is in flight;
    ``full`` names its streams that reached their size limit."""

    in_flight: bool
    full: frozenset[str] = frozenset()


def _last_row(stream: str, column: sa.ColumnElement[object]) -> sa.ScalarSelect[object]:
    return (
        sa.select(column)
        .where(job_log.c.job_id == job.c.id, job_log.c.stream == stream)
        .order_by(job_log.c.stream_offset.desc())
        .limit(1)
        .scalar_subquery()
    )


_STORED_ENDS = Direct(
    sa.select(
        job.c.id,
        *(
            column
            for stream in STREAMS
            for column in (
                _last_row(stream, job_log.c.stream_offset + job_log.c.size).label(f"{stream}_end"),
                _last_row(stream, job_log.c.kind).label(f"{stream}_kind"),
            )
        ),
    ).where(job.c.id.in_(sa.bindparam("job_ids", expanding=True)), in_flight(job.c.status))
)
"""For each job of ``job_ids`` still in flight, where each stream's stored bytes end (NULL:
none stored) and the kind of its last row: the check and the reads of a whole batch in one
statement. A stream's rows never overlap, so the one at the highest offset ends it (found
through the unique index on (job, stream, offset) without reading the stream's other rows);
a stream that reached its limit ends with its ``truncated`` row."""


_INSERT_CHUNK = Direct(
    insert_values(job_log, ("job_id", "stream", "stream_offset", "size", "kind", "data"))
)


@dataclass
class _Stream:
    end: int
    marked: bool
    """Whether the stream's ``truncated`` row is stored."""


def _row(
    job_id: int, stream: str, offset: int, kind: ChunkKind, data: bytes | int
) -> dict[str, object]:
    """A ``kind`` row at ``offset``: ``data``'s bytes, or for a marker the size it stands for."""
    text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else None
    return {
        "job_id": job_id,
        "stream": stream,
        "stream_offset": offset,
        "size": len(data) if isinstance(data, bytes) else data,
        "kind": kind.value,
        "data": text,
    }


def _append(
    rows: list[dict[str, object]],
    job_id: int,
    state: _Stream,
    chunk: PendingChunk,
    max_bytes: int,
) -> None:
    """The rows that store the bytes of ``chunk`` not stored yet, up to ``max_bytes`` of the
    stream, added to ``rows``; ``state`` follows."""
    stream = chunk.stream
    if chunk.end <= state.end:
        return  # a resend: every byte is stored
    if state.end < max_bytes:
        if chunk.offset > state.end:
            gap_end = min(chunk.offset, max_bytes)
            rows.append(_row(job_id, stream, state.end, ChunkKind.GAP, gap_end - state.end))
            state.end = gap_end
        # A resend cut at another character boundary than the first send stays readable: the
        # stored text of its first bytes may hold a replacement character.
        new = chunk.raw[max(0, state.end - chunk.offset) : max(0, max_bytes - chunk.offset)]
        if new:
            rows.append(_row(job_id, stream, state.end, ChunkKind.DATA, new))
            state.end += len(new)
    if chunk.end > max_bytes and not state.marked:
        rows.append(_row(job_id, stream, max_bytes, ChunkKind.TRUNCATED, 0))
        state.end = max(state.end, max_bytes)
        state.marked = True


def job_log_store(
    conn: Connection, pending: dict[int, list[PendingChunk]], max_bytes: int
) -> dict[int, Flushed]:
    """Store the chunks of several jobs, each job's in the order they arrived: of each chunk
    the bytes not stored yet (a resend stores nothing), after a ``gap`` row for bytes that
    never arrived, up to ``max_bytes`` of each stream and one ``truncated`` row past it.
    Nothing is stored for a job that has left claimed and running (a finished job's log never
    grows). Two statements whatever the number of jobs and chunks."""
    found = _STORED_ENDS.all(conn, {"job_ids": list(pending)})
    flying = {row.id: row for row in found}
    rows: list[dict[str, object]] = []
    outcome: dict[int, Flushed] = {}
    for job_id, chunks in pending.items():
        ends = flying.get(job_id)
        if ends is None:
            outcome[job_id] = Flushed(in_flight=False)
            continue
        states = {
            stream: _Stream(
                int(getattr(ends, f"{stream}_end") or 0),
                getattr(ends, f"{stream}_kind") == ChunkKind.TRUNCATED.value,
            )
            for stream in STREAMS
        }
        for chunk in chunks:
            _append(rows, job_id, states[chunk.stream], chunk, max_bytes)
        full = frozenset(stream for stream, state in states.items() if state.marked)
        outcome[job_id] = Flushed(in_flight=True, full=full)
    _INSERT_CHUNK.run_many(conn, rows)
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


def _tail_rows(tail: LogTail) -> list[dict[str, object]]:
    """The rows ``job_log_store`` would write for ``tail`` if none of the job's log were
    stored. Those it writes where a stream's stored bytes end (``end``) are the same rows cut
    at ``end``: each chunk's rows from ``end`` are its rows from nothing with the bytes below
    ``end`` cut off (a stream's end after a chunk is the greater of ``end`` and its end from
    nothing), and the ``truncated`` row only if the stream has none yet. A gap row cut is a
    shorter gap; a ``data`` row cut inside would need its text cut at a byte (``TAIL_FITS``)."""
    rows: list[dict[str, object]] = []
    states = {stream: _Stream(0, False) for stream in STREAMS}
    for chunk in tail.chunks:
        _append(rows, tail.job_id, states[chunk.stream], chunk, tail.max_bytes)
    return rows


_TAIL_COLUMNS = ("stream", "stream_offset", "size", "kind", "data")
_GIVEN_TAIL = unnested(
    [("position", sa.Integer()), *((name, job_log.c[name].type) for name in _TAIL_COLUMNS)],
    parameter_prefix="tail_",
    name="tail",
)


def _tail_ends() -> sa.CTE:
    stored = job_log.alias("stored")
    last = (
        sa.select((stored.c.stream_offset + stored.c.size).label("end"), stored.c.kind)
        .where(stored.c.job_id == sa.bindparam("job_id"), stored.c.stream == _GIVEN_TAIL.c.stream)
        .order_by(stored.c.stream_offset.desc())
        .limit(1)
        .lateral("last_row")
    )
    return (
        sa.select(
            _GIVEN_TAIL,
            sa.func.coalesce(last.c.end, 0).label("stored_end"),
            last.c.kind.label("stored_kind"),
        )
        .select_from(_GIVEN_TAIL.outerjoin(last, sa.true()))
        .cte("tail_ends")
    )


_TAIL_ENDS = _tail_ends()
"""The given tail's rows (``_tail_rows``), each with where its stream's stored bytes end (the
row at the highest offset ends them, as in ``_STORED_ENDS``) and that row's kind."""

_flying = job.alias("tail_job")
TAIL_IN_FLIGHT = (
    sa.exists()
    .where(_flying.c.id == sa.bindparam("job_id"), in_flight(_flying.c.status))
    .label("log_in_flight")
)
"""Whether the job (bound as ``job_id``) is in flight, as the statement found it: a tail is
stored only then (``job_log_store``'s rule)."""

TAIL_FITS = ~sa.exists().where(
    _TAIL_ENDS.c.kind == ChunkKind.DATA.value,
    _TAIL_ENDS.c.stream_offset < _TAIL_ENDS.c.stored_end,
    _TAIL_ENDS.c.stream_offset + _TAIL_ENDS.c.size > _TAIL_ENDS.c.stored_end,
)
"""No ``data`` row of the tail starts below where its stream's stored bytes end and ends past
it: then ``tail_after`` writes exactly what ``job_log_store`` would. A move's statement moves
only then; otherwise its caller stores the tail with ``job_log_store`` and moves apart
(``moves.move.apply_reading``): a resend cut elsewhere than the first send, rare."""


def tail_after(moved: sa.CTE) -> sa.Insert:
    """The rows of the tail that ``job_log_store`` would write, inserted for the job that
    ``moved`` (a data-modifying CTE returning its id) moved, if it was in flight: the insert
    of a move's own statement (``store.transitions``), bound by ``tail_params``."""
    t = _TAIL_ENDS.c
    start = sa.func.greatest(t.stream_offset, t.stored_end)
    gap = t.kind == ChunkKind.GAP.value
    new = sa.case(
        (
            t.kind == ChunkKind.TRUNCATED.value,
            sa.func.coalesce(t.stored_kind, "") != ChunkKind.TRUNCATED.value,
        ),
        (gap, t.stream_offset + t.size > t.stored_end),
        else_=t.stream_offset >= t.stored_end,
    )
    rows = (
        sa.select(
            moved.c.id,
            t.stream,
            sa.case((gap, start), else_=t.stream_offset),
            sa.case((gap, t.stream_offset + t.size - start), else_=t.size),
            t.kind,
            t.data,
        )
        .select_from(moved.join(_TAIL_ENDS, sa.true()))
        .where(new, TAIL_IN_FLIGHT.element)
        .order_by(t.position)
    )
    return job_log.insert().from_select(["job_id", *_TAIL_COLUMNS], rows)


def tail_params(tail: LogTail) -> dict[str, list[object]]:
    """The parameters of ``tail_after``, ``TAIL_FITS`` and ``TAIL_IN_FLIGHT`` for ``tail``
    (beside ``job_id``, the move's)."""
    rows = _tail_rows(tail)
    params: dict[str, list[object]] = {"tail_position": list(range(len(rows)))}
    for name in _TAIL_COLUMNS:
        params[f"tail_{name}"] = [row[name] for row in rows]
    return params


def job_log_store_tail(conn: Connection, tail: LogTail) -> None:
    """Store ``tail`` in the caller's transaction, unless an earlier committed transaction
    stored it (a move retried after a concurrent change); ``tail.stored`` says whether the
    job was in flight."""
    if tail.stored:
        return
    tail.stored = job_log_store(conn, {tail.job_id: tail.chunks}, tail.max_bytes)[
        tail.job_id
    ].in_flight
