"""Ending a background task: its own cancellation is absorbed, its caller's is not."""

from __future__ import annotations

import asyncio

import pytest

from benchrunner.server.tasks import cancel_and_wait


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
