"""A timer kept on the runner's clock: ``threading.Timer`` waits on the system's time, this one
on the ``ThreadClock`` the agent is built with, as its other deadlines are, so a test moves the
clock instead of waiting for the timer."""

from __future__ import annotations

import threading
from collections.abc import Callable

from benchrunner.core.clock import ThreadClock


class ClockTimer:
    """Calls ``expire`` from a thread of its own once ``clock`` reaches ``deadline``, unless
    stopped first."""

    def __init__(
        self, clock: ThreadClock, deadline: float, expire: Callable[[], None], *, name: str
    ) -> None:
        self._clock = clock
        self._deadline = deadline
        self._expire = expire
        self._cond = threading.Condition()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """No ``expire`` from now on (one already under way may still finish)."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()

    def _run(self) -> None:
        with self._cond:
            while not self._stopped and self._clock.monotonic() < self._deadline:
                self._clock.wait(self._cond, self._deadline)
            if self._stopped:
                return
        self._expire()


class ClockAlarm:
    """A ``ClockTimer`` armed again and again (each job's timeout, job after job) on one
    thread of its own, started when first armed: no thread is started per job, and arming or
    disarming it wakes that thread only when its wait would end too late."""

    def __init__(self, clock: ThreadClock, *, name: str) -> None:
        self._clock = clock
        self._name = name
        self._cond = threading.Condition()
        self._armed: tuple[float, Callable[[], None]] | None = None
        self._waiting_until: float | None = None
        """The deadline the thread waits for (None: only for a notification)."""
        self._thread: threading.Thread | None = None
        self._closed = False

    def arm(self, deadline: float, expire: Callable[[], None]) -> None:
        """Call ``expire`` once the clock reaches ``deadline``, unless disarmed (or armed
        again) first; replaces what was armed."""
        with self._cond:
            if self._closed:
                return
            self._armed = (deadline, expire)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
            elif self._waiting_until is None or self._waiting_until > deadline:
                self._cond.notify_all()

    def disarm(self) -> None:
        """No ``expire`` from now on (one already under way may still finish). The thread is
        left to wake at the deadline it waits for, and finds nothing armed."""
        with self._cond:
            self._armed = None

    def close(self) -> None:
        """Disarm, and end the thread."""
        with self._cond:
            self._closed = True
            self._armed = None
            self._cond.notify_all()

    def _run(self) -> None:
        while True:
            with self._cond:
                while True:
                    if self._closed:
                        return
                    armed = self._armed
                    if armed is not None and self._clock.monotonic() >= armed[0]:
                        self._armed = None
                        break
                    self._waiting_until = None if armed is None else armed[0]
                    self._clock.wait(self._cond, self._waiting_until)
            armed[1]()
