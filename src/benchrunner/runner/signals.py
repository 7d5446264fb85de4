"""SIGTERM and SIGINT request a drain (SPEC section 5, "Drain"); a second one cancels now.

A stop signal may come before the agent exists (``runner up --tune`` tunes the host first):
``StopRequests`` keeps it and hands it on, so the process always ends through its drain, never
by the default action of the signal."""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

log = logging.getLogger(__name__)

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


@contextmanager
def stop_signals_call(request_drain: Callable[[], None]) -> Iterator[None]:
    """While the block runs, each stop signal calls ``request_drain`` (which must be safe in a
    signal handler); previous handlers are restored after. Python delivers signals only to the
    main thread, so elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        log.debug("not on the main thread: stop signals are not handled")
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        request_drain()

    previous = {sig: signal.signal(sig, handler) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


class StopRequests:
    """Stop requests, held until ``forward_to`` names who takes them, then passed straight on.
    Safe to call from a signal handler."""

    def __init__(self) -> None:
        self._held = 0
        self._target: Callable[[], None] | None = None

    def __call__(self) -> None:
        target = self._target
        if target is None:
            self._held += 1
        else:
            target()

    def forward_to(self, target: Callable[[], None]) -> None:
        """``target`` takes the requests held so far, and every later one."""
        self._target = target  # first: a signal from now on goes to it, not to _held
        held, self._held = self._held, 0
        for _ in range(held):
            target()
