"""Ending the server's background tasks."""

from __future__ import annotations

import asyncio
from typing import Any


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
