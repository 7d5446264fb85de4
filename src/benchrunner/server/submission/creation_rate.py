"""How many unclaimed organizations (each with its project) anonymous runs from one source
address may create within an hour; beyond that, ``429`` with ``Retry-After``.

Each replica counts its own creations, in memory (a ``SlidingWindow``); the caller passes the
time (the server's monotonic clock), so tests move it. Only a run that creates counts: runs
into an existing project are never refused here.
"""

from __future__ import annotations

import math
import threading

from benchrunner.server.http.errors import ApiError
from benchrunner.server.http.sliding_window import SlidingWindow

WINDOW = 3600.0
MAX_ADDRESSES = 100_000


class CreationRate:
    """Anonymous creations per source address in the last hour; ``per_hour`` 0: no limit.

    Safe to use from the database threads that run submissions.
    """

    def __init__(self, per_hour: int) -> None:
        self.per_hour = per_hour
        self._window = SlidingWindow(max(per_hour, 1), WINDOW, MAX_ADDRESSES)
        self._lock = threading.Lock()

    def check(self, source_ip: str, now: float) -> None:
        """Raise 429 (``too_many_requests``, with ``Retry-After``) when ``source_ip`` has
        created ``per_hour`` organizations within the hour before ``now``."""
        if not self.per_hour:
            return
        with self._lock:
            wait = self._window.retry_after((source_ip,), now)
        if wait > 0:
            seconds = max(1, math.ceil(wait))
            raise ApiError(
                429,
                f"anonymous runs from {source_ip} created {self.per_hour} projects within the "
                f"hour (anonymous_projects_per_hour): sign in, name an existing project, or "
                f"try again in {seconds} s",
                error_code="too_many_requests",
                headers={"Retry-After": str(seconds)},
            )

    def record(self, source_ip: str, now: float) -> None:
        """Count one creation by ``source_ip`` at ``now``."""
        if not self.per_hour:
            return
        with self._lock:
            self._window.record((source_ip,), now)
