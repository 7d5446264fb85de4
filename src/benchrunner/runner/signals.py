"""SIGTERM and SIGINT escalate (docs/decisions/drain.md): the first drains,
the second cancels the running job now, the third ends the process at once.

The first two are requests to the agent, which acts on them between events (``drain.py``). The
third cannot wait for that: it raises ``ForcedExit`` in the main thread, wherever it is, so the
process leaves through its ``finally`` blocks (the agent's shutdown, which does not wait for the
job, and the host's restore after ``--tune``) with ``EXIT_FORCED``. What the spool holds stays
there for the next start; what the job left running, the guard stops (``guard.py``).

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
FORCING_REQUEST = 3
"""The stop request that exits at once instead of being passed on."""
EXIT_FORCED = 1


class ForcedExit(SystemExit):
    """The third stop request: leave now. A SystemExit, so that nothing on the way catches it
    and the interpreter exits with ``EXIT_FORCED`` once the ``finally`` blocks ran."""

    def __init__(self) -> None:
        super().__init__(EXIT_FORCED)


@contextmanager
def stop_signals_call(request_drain: Callable[[], None]) -> Iterator[None]:
    """While the block runs, each stop signal calls ``request_drain`` (which must be safe in a
    signal handler, and may raise ``ForcedExit``); previous handlers are restored after. Python
    delivers signals only to the main thread, so elsewhere this does nothing."""
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
    """Stop requests, held until ``forward_to`` names who takes them, then passed straight on;
    the third raises ``ForcedExit`` instead, and any after it are ignored (the process is on its
    way out, and a restore under way must not be cut short). Safe to call from a signal handler,
    which is where ``ForcedExit`` is meant to be raised."""

    def __init__(self) -> None:
        self._count = 0
        self._held = 0
        self._target: Callable[[], None] | None = None

    def __call__(self) -> None:
        self._count += 1
        if self._count == FORCING_REQUEST:
            log.warning("third stop request: exiting at once")
            raise ForcedExit
        if self._count > FORCING_REQUEST:
            return
        target = self._target
        if target is None:
            self._held += 1
        else:
            target()

    def forward_to(self, target: Callable[[], None]) -> None:
        """``target`` takes the requests held so far, and every later one but the third."""
        self._target = target  # first: a signal from now on goes to it, not to _held
        held, self._held = self._held, 0
        for _ in range(held):
            target()
