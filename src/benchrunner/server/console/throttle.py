"""Slowing down password guessing: after ``max_failures`` failed sign-ins for one email, or
from one client address, within ``window`` seconds, further attempts for it are refused until
the oldest failure is that old. Kept in this process's memory (each replica counts its own), and
bounded: past ``max_keys`` the keys with the oldest failures are forgotten first.

Pure bookkeeping: the caller passes the time (the server's monotonic clock), so tests move it.
"""

from __future__ import annotations

from collections import OrderedDict, deque

MAX_FAILURES = 10
WINDOW = 300.0
MAX_KEYS = 10_000


class LoginThrottle:
    def __init__(
        self, max_failures: int = MAX_FAILURES, window: float = WINDOW, max_keys: int = MAX_KEYS
    ) -> None:
        self.max_failures = max_failures
        self.window = window
        self.max_keys = max_keys
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()

    def _recent(self, key: str, now: float) -> deque[float] | None:
        times = self._failures.get(key)
        if times is None:
            return None
        while times and times[0] <= now - self.window:
            times.popleft()
        if not times:
            del self._failures[key]
            return None
        return times

    def retry_after(self, keys: tuple[str, ...], now: float) -> float:
        """Seconds until an attempt for any of ``keys`` is allowed again; 0 if it is now."""
        wait = 0.0
        for key in keys:
            times = self._recent(key, now)
            if times is not None and len(times) >= self.max_failures:
                wait = max(wait, times[-self.max_failures] + self.window - now)
        return wait

    def failed(self, keys: tuple[str, ...], now: float) -> None:
        for key in keys:
            times = self._recent(key, now) or deque()
            times.append(now)
            self._failures[key] = times
            self._failures.move_to_end(key)
        while len(self._failures) > self.max_keys:
            self._failures.popitem(last=False)

    def succeeded(self, key: str) -> None:
        """A correct password clears its email's failures (not its address's)."""
        self._failures.pop(key, None)
