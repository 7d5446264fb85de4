"""``UnitThreads``: a unit's result or error reaches its waiter on the loop; a unit whose waiter
was cancelled before a thread took it does not run; threads start only as units wait."""

from __future__ import annotations

import asyncio
import threading

import pytest

from benchrunner.server.store.unit_threads import UnitThreads


def test_results_errors_and_the_thread_they_ran_on() -> None:
    threads = UnitThreads(2, "test-units")

    async def main() -> None:
        assert await threads.run(lambda: threading.current_thread().name) == "test-units_0"
        empty: dict[str, int] = {}
        with pytest.raises(KeyError, match="missing"):
            await threads.run(lambda: empty["missing"])
        # One unit at a time needs one thread.
        for value in range(5):
            assert await threads.run(lambda value=value: value * 2) == value * 2  # type: ignore[misc]

    try:
        asyncio.run(main())
        assert len(threads._threads) == 1
    finally:
        threads.close()


def test_a_unit_cancelled_before_it_starts_does_not_run() -> None:
    threads = UnitThreads(1, "test-units")
    release = threading.Event()
    ran: list[str] = []

    def blocker() -> str:
        release.wait(10)
        ran.append("blocker")
        return "blocker"

    async def main() -> None:
        first = threads.run(blocker)
        queued = threads.run(lambda: ran.append("queued"))
        queued.cancel()
        release.set()
        assert await first == "blocker"
        # The thread reached the cancelled unit, skipped it, and takes the next one.
        assert await threads.run(lambda: "after") == "after"

    try:
        asyncio.run(main())
    finally:
        threads.close()
    assert ran == ["blocker"]


def test_units_waiting_together_get_threads_up_to_the_size() -> None:
    threads = UnitThreads(2, "test-units")
    both = threading.Barrier(2, timeout=10)

    async def main() -> None:
        # Each waits for the other: they finish only if they run at once, on two threads.
        assert sorted(await asyncio.gather(threads.run(both.wait), threads.run(both.wait))) == [
            0,
            1,
        ]
        await asyncio.gather(*(threads.run(lambda: None) for _ in range(10)))

    try:
        asyncio.run(main())
        assert len(threads._threads) == 2
    finally:
        threads.close()
    with pytest.raises(RuntimeError, match="closed"):
        asyncio.run(_run_after_close(threads))


async def _run_after_close(threads: UnitThreads) -> None:
    await threads.run(lambda: None)


def test_a_unit_whose_waiter_gave_up_still_holds_its_thread() -> None:
    """The waiter of a running unit is cancelled; the unit runs on, so the next unit gets a
    thread of its own instead of queueing behind it."""
    threads = UnitThreads(2, "test-units")
    release = threading.Event()

    async def main() -> None:
        stuck = threads.run(lambda: release.wait(10))
        await asyncio.sleep(0)
        stuck.cancel()
        assert await asyncio.wait_for(threads.run(lambda: "next"), 5) == "next"
        release.set()

    try:
        asyncio.run(main())
        assert len(threads._threads) == 2
    finally:
        release.set()
        threads.close()


def test_a_unit_that_raises_stop_iteration_reaches_its_waiter_as_an_error() -> None:
    threads = UnitThreads(1, "test-units")

    async def main() -> None:
        with pytest.raises(RuntimeError, match="StopIteration"):
            await asyncio.wait_for(threads.run(lambda: next(iter(()))), 5)

    try:
        asyncio.run(main())
    finally:
        threads.close()
