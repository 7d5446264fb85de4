"""The time sources. Injected wherever tests need to control time.

``Clock`` is wall time, for what is stored and shown. ``MonotonicClock`` is elapsed time, for
deadlines that live only in memory (a channel's heartbeat deadline, a cache's expiry); it can
also wait, so that a test's clock decides when a deadline has passed, not the event loop's.
``ThreadClock`` is the same for code on threads (the runner): its waits block a thread on a
condition or a queue until a deadline.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import functools
import queue
import threading
import time
from typing import Protocol, TypeVar

T = TypeVar("T")


class Clock(Protocol):
    def now(self) -> dt.datetime: ...


class SystemClock:
    now = functools.partial(dt.datetime.now, dt.UTC)
    """``now()``: a call of the C function, no Python frame (every heartbeat reads it)."""


class MonotonicClock(Protocol):
    def monotonic(self) -> float:
        """Seconds from an arbitrary origin; never goes back."""
        ...

    async def sleep_until(self, deadline: float) -> None:
        """Return once ``monotonic() >= deadline``."""
        ...


class SystemMonotonicClock:
    monotonic = staticmethod(time.monotonic)

    async def sleep_until(self, deadline: float) -> None:
        await asyncio.sleep(max(0.0, deadline - time.monotonic()))


class ThreadClock(Protocol):
    def monotonic(self) -> float:
        """Seconds from an arbitrary origin; never goes back."""
        ...

    def wait(self, condition: threading.Condition, deadline: float | None) -> None:
        """Called with ``condition`` held: return once it is notified or ``monotonic()``
        reaches ``deadline`` (None: only when notified). It may return early, so the caller
        checks what it waits for again."""
        ...

    def get(self, events: queue.SimpleQueue[T], deadline: float | None) -> T | None:
        """The next of ``events``, or None once ``monotonic()`` has reached ``deadline`` with
        none (None: wait for one)."""
        ...


class SystemThreadClock:
    def monotonic(self) -> float:
        return time.monotonic()

    def wait(self, condition: threading.Condition, deadline: float | None) -> None:
        condition.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))

    def get(self, events: queue.SimpleQueue[T], deadline: float | None) -> T | None:
        timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
        try:
            return events.get(timeout=timeout)
        except queue.Empty:
            return None


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)
