"""A job's stored output: where it goes and how it is read back.

A small output (at most ``INLINE_OUTPUT_BYTES``) is a row of ``job_output``, written in the
transaction of the status change it belongs to; a larger one is a blob
(``{project}/output/v0/jobs/{job}``), synced before that transaction. Readers look in the
database first, then in the blob store.

The bytes were written by this server from a validated message, yet what is read may be
anything: a blob lost or damaged on disk, a store shared with other versions, a hand edit. So
the reader is bounded in bytes and turns every failure into ``UnusableOutput``, whose message
can be shown to the job's viewers (it names no server path).
"""

from __future__ import annotations

import asyncio

from pydantic import ValidationError

from benchrunner.core.states import FINISHED
from benchrunner.protocol import JsonJobOutput
from benchrunner.server.blobs.blob_store import BlobStore, job_output_key
from benchrunner.server.context import ServerContext
from benchrunner.server.store import job_outputs
from benchrunner.server.store.job_outputs import INLINE_OUTPUT_BYTES
from benchrunner.server.store.jobs import JobRow


class UnusableOutput(Exception):
    """A job's stored output cannot be read or parsed; the message says why, for its viewers."""


class OutputMissing(UnusableOutput):
    """There is no stored output at all."""

    def __init__(self) -> None:
        super().__init__("the job's output is missing from the server's store")


def encode_output(output: JsonJobOutput) -> bytes:
    return output.model_dump_json(exclude_none=True).encode()


def belongs_in_row(data: bytes) -> bool:
    """Whether ``data`` is kept in the database rather than the blob store."""
    return len(data) <= INLINE_OUTPUT_BYTES


def store_blob(blobs: BlobStore, job: JobRow, data: bytes) -> None:
    """Write a large output to the blob store, synced. Blocking: call it off the event loop."""
    blobs.put(job_output_key(job.project_uuid, job.uuid), data)


async def job_output_bytes(ctx: ServerContext, job: JobRow, max_bytes: int) -> bytes:
    """The job's stored output, not decoded; raises as ``read_output`` does."""
    data = await ctx.db.read(job_outputs.output_get, job.id)
    if data is None:
        key = job_output_key(job.project_uuid, job.uuid)
        return await asyncio.to_thread(read_output, ctx.blobs, key, max_bytes)
    return row_output(data, max_bytes)


def row_output(data: bytes, max_bytes: int) -> bytes:
    """An output read from its row, if it is within ``max_bytes``; else ``UnusableOutput``."""
    if len(data) > max_bytes:
        raise UnusableOutput(_too_large(len(data), max_bytes))
    return data


async def load_job_output(ctx: ServerContext, job: JobRow) -> JsonJobOutput:
    """The job's stored output, decoded. Raises ``OutputMissing`` when there is none, and
    ``UnusableOutput`` when it is unreadable, larger than the processing budget or not a valid
    job output."""
    raw = await job_output_bytes(ctx, job, ctx.settings.processing_budget())
    if belongs_in_row(raw):
        return decode_output(raw)  # small: quicker here than a trip to a thread
    return await asyncio.to_thread(decode_output, raw)


async def shown_output(ctx: ServerContext, job: JobRow) -> JsonJobOutput | None:
    """A finished job's output as the API and the console show it (an unusable one as its
    error, never a failure of the page), or None before the job finished or without one."""
    if job.status not in FINISHED:
        return None
    try:
        output = await load_job_output(ctx, job)
    except OutputMissing:
        return None
    except UnusableOutput as exc:
        output = JsonJobOutput(error=str(exc))
    return output


async def has_job_output(ctx: ServerContext, job: JobRow) -> bool:
    if await ctx.db.read(job_outputs.output_exists, job.id):
        return True
    key = job_output_key(job.project_uuid, job.uuid)
    return await asyncio.to_thread(ctx.blobs.size, key) is not None


def output_size(blobs: BlobStore, key: str) -> int:
    """Bytes of the stored output, 0 when missing or unreadable (reading it will say why)."""
    try:
        return blobs.size(key) or 0
    except OSError:
        return 0


def read_output(blobs: BlobStore, key: str, max_bytes: int) -> bytes:
    """The blob under ``key``, read whole only when at most ``max_bytes`` long (see
    ``load_job_output``), not decoded. Blocking: call it off the event loop."""
    try:
        size = blobs.size(key)
        if size is None:
            raise OutputMissing
        if size > max_bytes:
            raise UnusableOutput(_too_large(size, max_bytes))
        chunks = blobs.read(key, length=max_bytes + 1)
        if chunks is None:
            raise OutputMissing
        raw = b"".join(chunks)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise UnusableOutput(f"the job's output could not be read: {reason}") from None
    if len(raw) > max_bytes:  # it grew between the size check and the read
        raise UnusableOutput(_too_large(len(raw), max_bytes))
    return raw


def decode_output(raw: bytes) -> JsonJobOutput:
    """Stored bytes as a job output; ``UnusableOutput`` when they are not one. CPU-heavy for
    large outputs: call it off the event loop."""
    try:
        return JsonJobOutput.model_validate_json(raw)
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        where = ".".join(str(part) for part in first["loc"]) or "the document"
        raise UnusableOutput(
            f"the job's stored output is not a valid job output: {first['msg'][:200]} "
            f"at {where[:200]}"
        ) from None


def _too_large(size: int, max_bytes: int) -> str:
    return (
        f"the job's output is {size} bytes, more than the {max_bytes} bytes the server reads "
        "(BENCHRUNNER_PROCESSING_BATCH_BYTES)"
    )
