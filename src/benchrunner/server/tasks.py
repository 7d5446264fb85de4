"""The server's background loops: running a step every interval, and ending them."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from benchrunner.core.clock import MonotonicClock

log = logging.getLogger(__name__)


async def cancel_and_wait(task: asyncio.Task[Any] | None) -> None:
    """Cancel ``task`` (None: nothing to do) and return once it has ended."""
    if task is None:
        return
    current = asyncio.current_task()
    cancelling = 0 if current is None else current.cancelling()
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        if current is not None and current.cancelling() > cancelling:
            raise  # the caller itself is being cancelled: that is not ours to swallow


async def repeat(
    clock: MonotonicClock,
    interval: float,
    step: Callable[[], Awaitable[object]],
    failed: str,
    *,
    at_once: bool = False,
) -> None:
    """Run ``step`` every ``interval`` seconds of ``clock`` (the first time at once if
    ``at_once``), until cancelled; a step that raises is logged (``failed``) and the next one
    runs as planned."""
    if not at_once:
        await clock.sleep_until(clock.monotonic() + interval)
    while True:
        try:
            await step()
        except Exception:
            log.exception("%s; trying again in %.0f s", failed, interval)
        await clock.sleep_until(clock.monotonic() + interval)
