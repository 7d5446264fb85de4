"""Pages of a job's log (docs/decisions/live-logs.md): byte offsets on the redacted UTF-8 text,
never a split character, never more than ``limit`` bytes."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

DEFAULT_LIMIT = 16384
MAX_LIMIT = 131072
MIN_LIMIT = 4
"""The longest UTF-8 character: a smaller limit could return nothing, forever."""


class OffsetError(ValueError):
    """The offset is past the end of the log, or inside a character; ``str()`` says which."""


@dataclass(frozen=True)
class LogSlice:
    content: bytes
    next_offset: int
    at_end: bool
    """Nothing of what was given follows ``next_offset``."""


def _continues(data: bytes | bytearray, index: int) -> bool:
    return index < len(data) and data[index] & 0xC0 == 0x80


def slice_log(pieces: Iterable[bytes], offset: int, limit: int, *, start: int = 0) -> LogSlice:
    """The bytes from ``offset`` of the concatenated ``pieces`` (each valid UTF-8; the first
    at ``start`` of the log, ``start <= offset``), at most ``limit`` of them, ending on a
    character boundary. Reads ``pieces`` only as far as needed.

    Raises OffsetError if ``offset`` is past the end or falls inside a character.
    """
    wanted = limit + 1  # one more than fits tells whether anything follows the page
    position = start
    taken = bytearray()
    for piece in pieces:
        end = position + len(piece)
        if end > offset:
            start = max(0, offset - position)
            if _continues(piece, start):
                raise OffsetError(f"offset {offset} is inside a UTF-8 character")
            taken += piece[start : start + wanted - len(taken)]
        position = end
        if len(taken) >= wanted:
            break
    if offset > position:
        raise OffsetError(f"offset {offset} is past the end of the log ({position} bytes)")
    cut = min(limit, len(taken))
    while _continues(taken, cut):
        cut -= 1
    return LogSlice(bytes(taken[:cut]), offset + cut, at_end=len(taken) <= limit)
