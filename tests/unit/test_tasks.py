"""Ending a background task: its own cancellation is absorbed, its caller's is not."""

from __future__ import annotations

import asyncio

import pytest

from benchrunner.server.tasks import cancel_and_wait, repeat


async def _slow_to_end() -> None:
    try:
        await asyncio.sleep(3600)
    finally:
        await asyncio.sleep(3600)  # cleaning up takes long


def test_a_tasks_own_cancellation_is_absorbed() -> None:
    async def scenario() -> bool:
        task = asyncio.create_task(asyncio.sleep(3600))
        await asyncio.sleep(0)
        await cancel_and_wait(task)
        await cancel_and_wait(None)
        return task.cancelled()

    assert asyncio.run(scenario())


def test_a_caller_cancelled_while_it_waits_is_cancelled() -> None:
    async def scenario() -> None:
        task = asyncio.create_task(_slow_to_end())
        await asyncio.sleep(0)
        async with asyncio.timeout(0.05):  # the caller's own budget runs out
            await cancel_and_wait(task)

    with pytest.raises(TimeoutError):
        asyncio.run(scenario())


class _Ticking:
    """A clock whose sleeps return at once, moving time to their deadline."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    async def sleep_until(self, deadline: float) -> None:
        self.now = max(self.now, deadline)
        await asyncio.sleep(0)


def test_a_step_that_fails_is_logged_and_the_next_runs_on_time(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = _Ticking()
    ran: list[float] = []

    async def step() -> None:
        ran.append(clock.now)
        if len(ran) == 2:
            raise RuntimeError("injected")
        if len(ran) == 4:
            raise asyncio.CancelledError

    async def scenario(at_once: bool) -> None:
        with pytest.raises(asyncio.CancelledError):
            await repeat(clock, 5.0, step, "the step failed", at_once=at_once)

    asyncio.run(scenario(at_once=False))
    assert ran == [5.0, 10.0, 15.0, 20.0]
    assert "the step failed; trying again in 5 s" in caplog.text
    clock.now, ran[:] = 0.0, []
    asyncio.run(scenario(at_once=True))
    assert ran == [0.0, 5.0, 10.0, 15.0]
