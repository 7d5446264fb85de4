"""SIGTERM and SIGINT request a drain (SPEC section 5, "Drain"); a second one cancels now."""

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
