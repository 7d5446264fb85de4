"""What an event loop has scheduled, for tests that check a loop sleeps while nothing happens."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


def timers(loop: asyncio.AbstractEventLoop) -> list[asyncio.TimerHandle]:
    """The timers the (pure Python) event loop has armed."""
    return list(vars(loop)["_scheduled"])


def reads_from(loop: asyncio.AbstractEventLoop, fileno: int) -> bool:
    """The (selector) event loop waits for ``fileno`` to become readable."""
    selector = vars(loop)["_selector"]
    key = selector.get_map().get(fileno)
    return key is not None and key.data[0] is not None


async def until(condition: Callable[[], bool], deadline_seconds: float = 30.0) -> None:
    """Let the loop run until ``condition`` holds; fail after ``deadline_seconds``."""
    give_up = time.monotonic() + deadline_seconds
    while not condition():
        if time.monotonic() > give_up:
            raise AssertionError(f"not reached within {deadline_seconds} s")
        await asyncio.sleep(0)
