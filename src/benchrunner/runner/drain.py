"""When the agent stops (docs/decisions/drain.md): escalating stop requests and their deadlines.

1st request   no new jobs; a running job may finish within ``grace`` seconds, then it is
              canceled (reported failed); idle, the agent stops at once
2nd request   a running job is canceled now (reported failed); idle, the agent stops now
afterwards    the last results get ``delivery`` seconds to be acked; what is still
              unacked stays spooled for the next start
3rd request   never reaches the agent's loop: ``signals.StopRequests`` exits at once

A runner-side cancel is reported ``failed`` with its reason, never ``canceled``: in the
protocol (Bencher's and ours) ``canceled`` acknowledges the server's ``cancel``.
"""

from __future__ import annotations

import logging

from benchrunner.runner.job import CancelReason

log = logging.getLogger("benchrunner.runner")


class Drain:
    def __init__(self, grace: float, delivery: float) -> None:
        self._grace = grace
        self._delivery = delivery
        self.level = 0
        self._cancel_at: float | None = None
        self._give_up_at: float | None = None

    @property
    def requested(self) -> bool:
        return self.level > 0

    def request(self, now: float, *, job_running: bool) -> CancelReason | None:
        """One more stop request; returns why to cancel the running job now, if it must be."""
        self.level += 1
        if self.level > 1:
            log.warning("second stop request: canceling now")
            self._cancel_at = None
            if job_running:
                return CancelReason.SHUTDOWN
            self._give_up_at = now
        elif job_running:
            log.info("draining: the running job may take %.0f s more; no new jobs", self._grace)
            self._cancel_at = now + self._grace
        else:
            log.info("draining: idle, stopping")
            self._give_up_at = now + self._delivery
        return None

    def job_finished(self, now: float) -> None:
        self._cancel_at = None
        if self.requested and self._give_up_at is None:
            self._give_up_at = now + self._delivery

    def job_overdue(self, now: float) -> bool:
        """True once, when the running job has used up the drain grace."""
        if self._cancel_at is None or now < self._cancel_at:
            return False
        self._cancel_at = None
        return True

    def delivery_over(self, now: float) -> bool:
        return self._give_up_at is not None and now >= self._give_up_at

    def deadlines(self) -> list[float | None]:
        return [self._cancel_at, self._give_up_at]
