"""``ManualThreadClock``: the runner's monotonic time, moved only by the test.

A wait on it ends when its condition is notified or its queue gets an item, as on the system
clock, or once the test advanced the clock to its deadline; never because real time passed.
``waiting`` names the deadlines threads are blocked on, so a test can tell that the code under
test has reached its wait before it moves the clock.
"""

from __future__ import annotations

import queue
import threading
from typing import TypeVar

T = TypeVar("T")

QUEUE_POLL = 0.01
"""Real seconds between two looks at the clock while a ``get`` waits: a ``SimpleQueue`` can be
woken only by an item, and the agent's takes items from signal handlers, so it stays one."""


class ManualThreadClock:
    def __init__(self, start: float = 1000.0) -> None:
        self._now = start
        self._lock = threading.Lock()
        self._deadlines: list[float] = []
        self._conditions: list[threading.Condition] = []

    def monotonic(self) -> float:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._now += seconds
            conditions = list(self._conditions)
        for condition in conditions:  # each waiter holds its own until it waits: none is lost
            with condition:
                condition.notify_all()

    def waiting(self) -> list[float]:
        """The deadlines of the waits in progress, earliest first."""
        with self._lock:
            return sorted(self._deadlines)

    def wait(self, condition: threading.Condition, deadline: float | None) -> None:
        if deadline is None:
            condition.wait()
            return
        with self._lock:
            if self._now >= deadline:
                return
            self._deadlines.append(deadline)
            self._conditions.append(condition)
        try:
            condition.wait()
        finally:
            with self._lock:
                self._deadlines.remove(deadline)
                self._conditions.remove(condition)

    def get(self, events: queue.SimpleQueue[T], deadline: float | None) -> T | None:
        if deadline is None:
            return events.get()
        with self._lock:
            self._deadlines.append(deadline)
        try:
            while True:
                try:
                    return events.get(timeout=QUEUE_POLL)
                except queue.Empty:
                    if self.monotonic() >= deadline:
                        return None
        finally:
            with self._lock:
                self._deadlines.remove(deadline)
