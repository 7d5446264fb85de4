"""A long-lived thread on the housekeeping core that sends on the channel it is attached to
(the heartbeat, the live log): its condition, its channel, and how it starts and stops."""

from __future__ import annotations

import threading

from benchrunner.runner.cores import CorePlan
from benchrunner.runner.transport import Transport


class ChannelThread:
    def __init__(self, name: str, cores: CorePlan) -> None:
        self._cores = cores
        self._cond = threading.Condition()
        self._channel: Transport | None = None
        self._stopped = False
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._channel = None
            self._cond.notify_all()
        if self._thread.is_alive():
            self._thread.join()

    def _main(self) -> None:
        self._cores.pin_to_housekeeping()
        self._run()

    def _run(self) -> None:
        raise NotImplementedError
