"""Reading a job's stored output back (``{project}/output/v0/jobs/{job}`` in the blob store).

The bytes were written by this server from a validated message, yet what is read may be
anything: a blob lost or damaged on disk, a store shared with other versions, a hand edit. So
the reader is bounded in bytes and turns every failure into ``UnusableOutput``, whose message
can be shown to the job's viewers (it names no server path).
"""

from __future__ import annotations

from pydantic import ValidationError

from benchrunner.protocol import JsonJobOutput
from benchrunner.server.blobs import BlobStore


class UnusableOutput(Exception):
    """A job's stored output cannot be read or parsed; the message says why, for its viewers."""


class OutputMissing(UnusableOutput):
    """There is no stored output at all."""

    def __init__(self) -> None:
        super().__init__("the job's output is missing from the blob store")


def output_size(blobs: BlobStore, key: str) -> int:
    """Bytes of the stored output, 0 when missing or unreadable (reading it will say why)."""
    try:
        return blobs.size(key) or 0
    except OSError:
        return 0


def load_output(blobs: BlobStore, key: str, max_bytes: int) -> JsonJobOutput:
    """The stored output under ``key``, read whole only when at most ``max_bytes`` long.

    Raises ``OutputMissing`` when there is none, and ``UnusableOutput`` when it is unreadable,
    larger than ``max_bytes`` or not a valid job output. Blocking: call it off the event loop.
    """
    return decode_output(read_output(blobs, key, max_bytes))


def read_output(blobs: BlobStore, key: str, max_bytes: int) -> bytes:
    """The stored bytes under ``key`` (see ``load_output``), not decoded. Blocking."""
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
