"""Where a job's redacted log reaches each mebibyte: so a page far into a long log reads from
near its offset, not from the log's start.

A job's chunks never change and its redaction is fixed (``REDACTION_VERSION``, its environment),
so a position once computed stays true. Kept per server process for the most recently read jobs.
"""

from __future__ import annotations

import bisect
from collections import OrderedDict

CHECKPOINT_BYTES = 1 << 20
MAX_JOBS = 1024


class LogIndex:
    def __init__(self, every: int = CHECKPOINT_BYTES, max_jobs: int = MAX_JOBS) -> None:
        self._every = every
        self._max_jobs = max_jobs
        # job id -> (offsets, chunk ids): the log from ``offsets[i]`` on is the chunks after
        # ``chunk ids[i]``
        self._jobs: OrderedDict[int, tuple[list[int], list[int]]] = OrderedDict()

    def before(self, job_id: int, offset: int) -> tuple[int, int]:
        """``(chunk id, position)``: the log from ``position`` (at most ``offset``) is made of
        the chunks after that id; ``(0, 0)`` when nothing is known."""
        known = self._jobs.get(job_id)
        if known is None:
            return 0, 0
        self._jobs.move_to_end(job_id)
        offsets, chunk_ids = known
        index = bisect.bisect_right(offsets, offset) - 1
        return (chunk_ids[index], offsets[index]) if index >= 0 else (0, 0)

    def note(self, job_id: int, chunk_id: int, position: int) -> None:
        """The log from ``position`` on is made of the chunks after ``chunk_id``."""
        offsets, chunk_ids = self._jobs.setdefault(job_id, ([], []))
        self._jobs.move_to_end(job_id)
        if position >= (offsets[-1] if offsets else 0) + self._every:
            offsets.append(position)
            chunk_ids.append(chunk_id)
        while len(self._jobs) > self._max_jobs:
            self._jobs.popitem(last=False)
