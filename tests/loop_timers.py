"""What an event loop has scheduled, for tests that check a loop sleeps while nothing happens."""

from __future__ import annotations

import asyncio


def timers(loop: asyncio.AbstractEventLoop) -> list[asyncio.TimerHandle]:
    """The timers the (pure Python) event loop has armed."""
    return list(vars(loop)["_scheduled"])
