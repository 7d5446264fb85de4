"""The job slot: one long-lived thread that runs the runner's jobs one after another.

A job then starts without a thread being created for it (creating one and waiting for it to run
costs a good part of a millisecond on a busy machine), and the thread is pinned to the
housekeeping core once. The job's processes are forked from this thread, so their parent-death
signal (``executors/group.py``) fires only when the runner ends.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable

from benchrunner.runner.cores import CorePlan

log = logging.getLogger(__name__)


class JobSlot:
    def __init__(self, cores: CorePlan) -> None:
        self._cores = cores
        self._work: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._serve, name="job-slot", daemon=True)
        self._thread.start()

    def run(self, work: Callable[[], None]) -> None:
        """Run ``work`` on the slot's thread after what was handed in before. Does not block."""
        self._work.put(work)

    def close(self) -> None:
        """End the thread once the work handed in so far is done. Does not block."""
        self._work.put(None)

    def _serve(self) -> None:
        self._cores.pin_to_housekeeping()
        while (work := self._work.get()) is not None:
            try:
                work()
            except Exception:  # a bug in one job must not stop every later one
                log.exception("job slot: unexpected error")
