"""The server's background loops: running a step every interval or when woken, and ending
them."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from benchrunner.core.clock import MonotonicClock

log = logging.getLogger(__name__)

T = TypeVar("T")


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


async def finish_first(step: Awaitable[T]) -> T:
    """``step``'s result, ``step`` run to its end even when the caller is cancelled meanwhile:
    a write whose commit may land must not lose what it committed. The cancellation is asked
    again once ``step`` ended, so the caller ends cancelled all the same, at its next await
    (or as it returns)."""
    task = asyncio.ensure_future(step)
    swallowed = 0
    while not task.done():
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError:
            swallowed += 1
    current = asyncio.current_task()
    if swallowed and current is not None:
        for _ in range(swallowed):
            current.uncancel()
        current.cancel()
    return task.result()


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


class WokenLoop:
    """A background step run when woken and every ``interval`` seconds of the monotonic clock
    (for what other replicas did). ``wake`` looks only while the latest step found work, so
    that a server with none spends no query on each event; ``changed`` looks whatever."""

    def __init__(self, clock: MonotonicClock, interval: float, name: str) -> None:
        self._clock = clock
        self._interval = interval
        self._name = name
        self._woken = asyncio.Event()
        self.busy = True
        """Whether the latest step found work (True until the first): set by ``step``."""
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=self._name)

    async def stop(self) -> None:
        await cancel_and_wait(self._task)

    def wake(self) -> None:
        """Something the work waits on happened: look, if there is work."""
        if self.busy:
            self._woken.set()

    def changed(self) -> None:
        """Work may have been added here: look now."""
        self.busy = True
        self._woken.set()

    async def step(self) -> int:
        """One look; how much work it found."""
        raise NotImplementedError

    async def _run(self) -> None:
        clock = self._clock
        while True:
            woken = asyncio.ensure_future(self._woken.wait())
            slept = asyncio.ensure_future(clock.sleep_until(clock.monotonic() + self._interval))
            try:
                await asyncio.wait({woken, slept}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for waiting in (woken, slept):
                    waiting.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await waiting
            self._woken.clear()
            try:
                await self.step()
            except Exception:
                log.exception("the %s loop's step failed; trying again", self._name)
