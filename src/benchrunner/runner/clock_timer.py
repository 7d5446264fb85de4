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
