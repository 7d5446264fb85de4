"""The time sources. Injected wherever tests need to control time.

``Clock`` is wall time, for what is stored and shown. ``MonotonicClock`` is elapsed time, for
deadlines that live only in memory (a channel's heartbeat deadline, a cache's expiry); it can
also wait, so that a test's clock decides when a deadline has passed, not the event loop's.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> dt.datetime: ...


class SystemClock:
    def now(self) -> dt.datetime:
        return dt.datetime.now(dt.UTC)


class MonotonicClock(Protocol):
    def monotonic(self) -> float:
        """Seconds from an arbitrary origin; never goes back."""
        ...

    async def sleep_until(self, deadline: float) -> None:
        """Return once ``monotonic() >= deadline``."""
        ...


class SystemMonotonicClock:
    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep_until(self, deadline: float) -> None:
        await asyncio.sleep(max(0.0, deadline - time.monotonic()))


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)
