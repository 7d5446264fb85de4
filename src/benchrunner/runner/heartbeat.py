"""The heartbeat: ``{"event":"heartbeat"}`` every interval while a job executes.

One long-lived thread on the housekeeping core. The agent ``attach``es it to the channel once
``running`` was sent there, and ``detach``es it when the job finishes, before a terminal message
is sent, and when the channel is lost. ``detach`` returns only when no heartbeat send is in
progress, so nothing is sent after it: the server's next ``ack`` then cannot be a heartbeat's.
"""

from __future__ import annotations

import logging

from benchrunner.core.clock import SystemThreadClock, ThreadClock
from benchrunner.protocol import Heartbeat
from benchrunner.runner.channel import ChannelClosedError
from benchrunner.runner.channel_thread import ChannelThread
from benchrunner.runner.cores import CorePlan
from benchrunner.runner.transport import Transport

log = logging.getLogger(__name__)


class HeartbeatSender(ChannelThread):
    def __init__(self, interval: float, cores: CorePlan, clock: ThreadClock | None = None) -> None:
        super().__init__("heartbeat", cores)
        self._interval = interval
        self._clock = clock or SystemThreadClock()
        self._next_due = 0.0

    def attach(self, channel: Transport) -> None:
        """Heartbeat on ``channel``, first one interval from now. No-op if already attached."""
        with self._cond:
            if self._channel is channel:
                return
            self._channel = channel
            self._next_due = self._clock.monotonic() + self._interval
            self._cond.notify_all()

    def detach(self) -> None:
        """Stop heartbeating; returns after any send in progress has finished."""
        with self._cond:
            self._channel = None
            self._cond.notify_all()

    def _run(self) -> None:
        with self._cond:
            while not self._stopped:
                channel = self._channel
                if channel is None:
                    self._cond.wait()
                    continue
                now = self._clock.monotonic()
                if now < self._next_due:
                    self._clock.wait(self._cond, self._next_due)
                    continue
                self._next_due += self._interval
                if self._next_due <= now:  # skip missed beats rather than burst after a stall
                    self._next_due = now + self._interval
                try:
                    # Sent while holding the condition: detach() waits for it to finish.
                    channel.send(Heartbeat(), expect_ack=True)
                except ChannelClosedError:
                    # The receiver thread reports the loss; the agent will detach us.
                    log.debug("heartbeat not sent: channel closed")
