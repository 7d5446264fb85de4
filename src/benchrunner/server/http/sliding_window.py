"""Counting events per key within a sliding window, in this process's memory (each replica
counts its own), bounded: past ``max_keys`` the keys with the oldest events are forgotten first.

Pure bookkeeping: the caller passes the time (the server's monotonic clock), so tests move it.
Used to slow down password guessing and to rate-limit runners' job claims.
"""

from __future__ import annotations

from collections import OrderedDict, deque


class SlidingWindow:
    def __init__(self, limit: int, window: float, max_keys: int) -> None:
        self.limit = limit
        self.window = window
        self.max_keys = max_keys
        self._events: OrderedDict[str, deque[float]] = OrderedDict()

    def _recent(self, key: str, now: float) -> deque[float] | None:
        times = self._events.get(key)
        if times is None:
            return None
        while times and times[0] <= now - self.window:
            times.popleft()
        if not times:
            del self._events[key]
            return None
        return times

    def retry_after(self, keys: tuple[str, ...], now: float) -> float:
        """Seconds until one more event for any of ``keys`` is allowed; 0 if it is now."""
        wait = 0.0
        for key in keys:
            times = self._recent(key, now)
            if times is not None and len(times) >= self.limit:
                wait = max(wait, times[-self.limit] + self.window - now)
        return wait

    def record(self, keys: tuple[str, ...], now: float) -> None:
        for key in keys:
            times = self._recent(key, now) or deque()
            times.append(now)
            self._events[key] = times
            self._events.move_to_end(key)
        while len(self._events) > self.max_keys:
            self._events.popitem(last=False)

    def clear(self, key: str) -> None:
        self._events.pop(key, None)
