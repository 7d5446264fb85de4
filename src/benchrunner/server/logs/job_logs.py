"""A job's live log as clients read it: redacted on read, paged by offset, followed to its end.

The log is the job's chunks in order of arrival, stdout and stderr interleaved as they came,
each chunk redacted on its own (``JobLogRedactor``: the patterns of ``REDACTION_VERSION`` and the
job's secret-looking environment values) and gaps and truncations shown as marker lines. The
stored chunks never change, so the redacted text only ever grows at its end and an offset
handed out stays valid. A secret cut across two chunks (a line longer than a chunk, or a
partial line sent after waiting) is redacted in neither part.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Connection

from benchrunner.core.log_paging import LogSlice, slice_log
from benchrunner.core.redaction import REDACTION_VERSION, JobLogRedactor, secret_values
from benchrunner.core.states import FINISHED
from benchrunner.server.context import ServerContext
from benchrunner.server.logs.log_index import LogIndex
from benchrunner.server.store import jobs
from benchrunner.server.store.job_logs import ChunkKind, LogChunk, job_log_chunks
from benchrunner.server.store.jobs import JobRow

BATCH = 256
"""Chunks read per query (at most 64 KiB each)."""
FOLLOW_POLL = 1.0
"""A follower looks again this often without a wake-up: chunks stored by another replica."""


def redactor_for(job: JobRow) -> JobLogRedactor:
    return JobLogRedactor(secret_values(job.config.env))


def rendered(chunk: LogChunk, redactor: JobLogRedactor) -> bytes:
    """The chunk as the log shows it: redacted text, or a marker line."""
    if chunk.kind is ChunkKind.GAP:
        return f"\n[benchrunner: {chunk.size} bytes of {chunk.stream} lost]\n".encode()
    if chunk.kind is ChunkKind.TRUNCATED:
        return f"\n[benchrunner: {chunk.stream} truncated at {chunk.offset} bytes]\n".encode()
    return redactor(chunk.data or "").encode()


def _pieces(
    conn: Connection, job: JobRow, index: LogIndex, after: int, position: int
) -> Iterator[bytes]:
    """The rendered chunks after chunk id ``after``, which start at ``position``."""
    redactor = redactor_for(job)
    while True:
        chunks = job_log_chunks(conn, job.id, after, BATCH)
        for chunk in chunks:
            piece = rendered(chunk, redactor)
            position += len(piece)
            index.note(job.id, chunk.id, position)
            yield piece
        if len(chunks) < BATCH:
            return
        after = chunks[-1].id


@dataclass(frozen=True)
class LogPage:
    job: JobRow
    offset: int
    slice: LogSlice

    @property
    def is_complete(self) -> bool:
        return self.job.status in FINISHED and self.slice.at_end

    def view(self) -> dict[str, Any]:
        return {
            "job_id": str(self.job.uuid),
            "offset": self.offset,
            "next_offset": self.slice.next_offset,
            "is_complete": self.is_complete,
            "content": self.slice.content.decode(),
            "redaction_version": REDACTION_VERSION,
        }


def log_page(conn: Connection, index: LogIndex, job: JobRow, offset: int, limit: int) -> LogPage:
    """A page of ``job``'s log; ``job`` read in the same transaction, before its chunks, so a
    finished job's log is whole. Raises OffsetError."""
    after, position = index.before(job.id, offset)
    pieces = _pieces(conn, job, index, after, position)
    return LogPage(job, offset, slice_log(pieces, offset, limit, start=position))


def _event(name: str, data: dict[str, Any]) -> str:
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


async def follow(ctx: ServerContext, job: JobRow, offset: int) -> AsyncIterator[str]:
    """Server-sent events: ``log`` (``offset``, ``next_offset``, ``content``) for each new piece
    of the log from ``offset`` (an offset the API handed out), then one ``end`` (``next_offset``,
    ``status``) once the job has finished and everything was sent."""
    redactor = redactor_for(job)
    after, position = ctx.log_index.before(job.id, offset)  # position: of the next piece

    def unit(conn: Connection) -> tuple[JobRow | None, list[LogChunk]]:
        return jobs.job_get(conn, job.id), job_log_chunks(conn, job.id, after, BATCH)

    while True:
        with ctx.log_watch.watching(job.id) as woken:
            current, chunks = await ctx.db.read(unit)
            for chunk in chunks:
                piece = rendered(chunk, redactor)
                start = max(0, offset - position)
                if start < len(piece):
                    content = piece[start:].decode(errors="replace")
                    data = {"offset": position + start, "next_offset": position + len(piece)}
                    yield _event("log", {**data, "content": content})
                position += len(piece)
                after = chunk.id
                ctx.log_index.note(job.id, after, position)
            if len(chunks) == BATCH:
                continue
            if current is None or current.status in FINISHED:
                status = current.status.wire if current is not None else "deleted"
                yield _event("end", {"next_offset": max(position, offset), "status": status})
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(woken.wait(), FOLLOW_POLL)
