"""A timer kept on the runner's clock: ``threading.Timer`` waits on the system's time, this one
on the ``ThreadClock`` the agent is built with, as its other deadlines are, so a test moves the
clock instead of waiting for the timer."""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable
from typing import Any

from benchrunner.core.clock import ThreadClock


def pause(clock: ThreadClock, seconds: float) -> None:
    """Return once ``clock`` has moved on by ``seconds``: ``time.sleep`` on the runner's
    clock, for polling what gives no notification (a process ending)."""
    deadline = clock.monotonic() + seconds
    condition = threading.Condition()
    with condition:
        while clock.monotonic() < deadline:
            clock.wait(condition, deadline)


class ProcessExit:
    """The exit of ``process``, waited for on the runner's clock: a thread of its own waits
    for the process and tells, so the exit ends a wait at once and a deadline is the clock's."""

    def __init__(self, process: subprocess.Popen[Any]) -> None:
        self._process = process
        self._ended = threading.Condition()
        self._exited = False
        threading.Thread(target=self._reap, name=f"exit-{process.pid}", daemon=True).start()

    def wait(self, clock: ThreadClock, deadline: float) -> bool:
        """True once the process has exited; False if it still runs when ``clock`` reaches
        ``deadline``."""
        with self._ended:
            while not self._exited and clock.monotonic() < deadline:
                clock.wait(self._ended, deadline)
            return self._exited

    def _reap(self) -> None:
        self._process.wait()
        with self._ended:
            self._exited = True
            self._ended.notify_all()


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
