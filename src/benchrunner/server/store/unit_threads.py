"""The database threads: where ``Database`` runs PostgreSQL's units of work off the event loop.

Each unit crosses from the event loop to a thread and its result back, twice a thread woken
per unit. ``loop.run_in_executor`` on a ``ThreadPoolExecutor`` adds to that a
``concurrent.futures.Future`` (with its lock and condition) chained to the asyncio future by
callbacks on both sides, and the executor's idle-thread semaphore: on this machine about half
of what a hop costs the process apart from the wake-ups (``benchmarks/db_units.py``). Here a
unit and the asyncio future that waits for it go on a queue, and the thread that ran it sets
that future on its loop, with nothing in between.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_Item = tuple[asyncio.AbstractEventLoop, "asyncio.Future[Any]", Callable[[], Any]]


class UnitThreads:
    """Up to ``size`` threads, started as units wait for them, each running one unit at a
    time in the order they were given. A unit whose waiter was cancelled before a thread took
    it is not run; one already running finishes, and its result is dropped."""

    def __init__(self, size: int, name: str) -> None:
        self.size = size
        self.name = name
        self._queue: queue.SimpleQueue[_Item | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._busy = 0
        """Units given and not yet answered, counted on the event loop (given, answered)."""
        self._closed = False

    def run(self, call: Callable[[], T]) -> asyncio.Future[T]:
        """A future, on the running loop, for ``call()`` run on one of the threads."""
        if self._closed:
            raise RuntimeError(f"{self.name}: closed")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._busy += 1
        future.add_done_callback(self._answered)
        self._queue.put((loop, future, call))
        if self._busy > len(self._threads) < self.size:
            thread = threading.Thread(
                target=self._work, name=f"{self.name}_{len(self._threads)}", daemon=True
            )
            thread.start()
            self._threads.append(thread)
        return future

    def _answered(self, _future: asyncio.Future[Any]) -> None:
        self._busy -= 1

    def _work(self) -> None:
        while (item := self._queue.get()) is not None:
            loop, future, call = item
            if future.cancelled():
                continue
            try:
                result = call()
            except BaseException as exc:  # the waiter gets it, as from the unit itself
                self._answer(loop, future, None, exc)
            else:
                self._answer(loop, future, result, None)
            del item, future, call

    @staticmethod
    def _answer(
        loop: asyncio.AbstractEventLoop,
        future: asyncio.Future[Any],
        result: Any,
        error: BaseException | None,
    ) -> None:
        # A loop closed meanwhile has no one waiting any more.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(_settle, future, result, error)

    def close(self) -> None:
        """Stop taking units; wait for the threads to finish the ones they were given."""
        self._closed = True
        for _ in self._threads:
            self._queue.put(None)
        for thread in self._threads:
            thread.join()
        self._threads.clear()


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.cancelled():
        return
    if error is None:
        future.set_result(result)
    else:
        future.set_exception(error)
