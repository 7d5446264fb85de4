"""The database threads: where ``Database`` runs PostgreSQL's units of work off the event loop.

Each unit crosses from the event loop to a thread and its result back, twice a thread woken
per unit. ``loop.run_in_executor`` on a ``ThreadPoolExecutor`` adds to that a
``concurrent.futures.Future`` (with its lock and condition) chained to the asyncio future by
callbacks on both sides, and the executor's idle-thread semaphore: on this machine about half
of what a hop costs the process apart from the wake-ups (measured beside it in
benchmarks/RESULTS.md). Here a unit and the asyncio future that waits for it go on a queue, and
the thread that ran it sets that future on its loop, with nothing in between.
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
        """Units given and not yet finished by a thread (run, or passed over as cancelled):
        counted on the event loop. A waiter cancelled while its unit runs still holds a thread."""
        self._closed = False

    def run(self, call: Callable[[], T]) -> asyncio.Future[T]:
        """A future, on the running loop, for ``call()`` run on one of the threads."""
        if self._closed:
            raise RuntimeError(f"{self.name}: closed")
        loop = asyncio.get_running_loop()
        if self._busy >= len(self._threads) < self.size:
            # Started before the unit is queued: a thread that cannot start leaves no unit
            # behind for a later thread to run unasked.
            thread = threading.Thread(
                target=self._work, name=f"{self.name}_{len(self._threads)}", daemon=True
            )
            thread.start()
            self._threads.append(thread)
        future: asyncio.Future[T] = loop.create_future()
        self._busy += 1
        self._queue.put((loop, future, call))
        return future

    def _work(self) -> None:
        while (item := self._queue.get()) is not None:
            loop, future, call = item
            result: Any = None
            error: BaseException | None = None
            if not future.cancelled():
                try:
                    result = call()
                except BaseException as exc:  # the waiter gets it, as from the unit itself
                    error = exc
            # One callback both frees the count and answers, so a waiter that runs its next
            # unit at once finds this thread counted free.
            with contextlib.suppress(RuntimeError):  # a loop closed meanwhile: no one waits
                loop.call_soon_threadsafe(self._finished, future, result, error)
            del item, future, call, result, error

    def _finished(
        self, future: asyncio.Future[Any], result: Any, error: BaseException | None
    ) -> None:
        self._busy -= 1
        _settle(future, result, error)

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
    elif isinstance(error, StopIteration):
        # A future refuses StopIteration (it would end the awaiting coroutine's frame).
        future.set_exception(RuntimeError(f"a unit raised {error!r}"))
    else:
        future.set_exception(error)
