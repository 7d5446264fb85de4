"""Wake-ups for clients following a job's log in this process: a channel session that stored a
chunk (or a result) notifies; a follower waits with a timeout, which also covers chunks stored by
another replica."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator


class LogWatch:
    def __init__(self) -> None:
        self._waiters: dict[int, set[asyncio.Event]] = {}

    def notify(self, job_id: int) -> None:
        for event in self._waiters.get(job_id, ()):
            event.set()

    @contextlib.contextmanager
    def watching(self, job_id: int) -> Iterator[asyncio.Event]:
        """An event set by every ``notify(job_id)`` while the block runs: take it before reading
        the log, so a chunk stored between the read and the wait is not missed."""
        event = asyncio.Event()
        waiters = self._waiters.setdefault(job_id, set())
        waiters.add(event)
        try:
            yield event
        finally:
            waiters.discard(event)
            if not waiters:
                self._waiters.pop(job_id, None)
