"""Slowing down password guessing: after ``max_failures`` failed sign-ins for one email, or
from one client address, within ``window`` seconds, further attempts for it are refused until
the oldest failure is that old (a ``SlidingWindow`` of failures).
"""

from __future__ import annotations

from benchrunner.server.http.sliding_window import SlidingWindow

MAX_FAILURES = 10
WINDOW = 300.0
MAX_KEYS = 10_000


class LoginThrottle(SlidingWindow):
    def __init__(
        self, max_failures: int = MAX_FAILURES, window: float = WINDOW, max_keys: int = MAX_KEYS
    ) -> None:
        super().__init__(max_failures, window, max_keys)

    def failed(self, keys: tuple[str, ...], now: float) -> None:
        self.record(keys, now)

    def succeeded(self, key: str) -> None:
        """A correct password clears its email's failures (not its address's)."""
        self.clear(key)
