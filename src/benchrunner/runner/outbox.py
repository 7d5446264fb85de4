"""Terminal results on their way to the server: spooled, sent one at a time, oldest first, and
forgotten only when the server answers.

Which reply is the result's: the server answers ``running``, ``heartbeat`` and terminal messages
in order (docs/decisions/channel.md), so a result is sent only once no earlier message on the
channel awaits a reply; the next ``ack`` (carrying this job or no job) is then the result's. A
server that never acks heartbeats is tolerated: after SETTLE_TIMEOUT the earlier replies are given
up on. An ``error`` refuses the result only when it names it (``reply_to``: the result's event,
and its job if any): a ``log`` is answered only when refused, so the refusal of one sent just
before the result arrives after the result went out. An error naming nothing comes from a server
that predates ``reply_to`` (or answers a message it could not read); it is the result's unless it
refuses a ``log`` (``Error.refused_event``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from benchrunner.protocol import (
    Ack,
    Canceled,
    Error,
    Failed,
    IterationResult,
    TerminalMessage,
)
from benchrunner.runner.signing import ResultSigner
from benchrunner.runner.spool import Spool
from benchrunner.runner.transport import Transport

log = logging.getLogger(__name__)

ACK_TIMEOUT = 30.0  # no reply to a result for this long: the connection is presumed dead
SETTLE_TIMEOUT = 1.0  # longest wait for replies to earlier messages before a result is sent


class Outbox:
    def __init__(self, spool: Spool, signer: ResultSigner | None = None) -> None:
        self._spool = spool
        self._signer = signer
        self._pending: list[TerminalMessage] = []
        self._sent_at: float | None = None  # the head is in flight iff set
        self._settle_deadline: float | None = None

    def __len__(self) -> int:
        return len(self._pending)

    def load(self) -> int:
        """Take over what an earlier run left in the spool; returns how many."""
        self._pending = self._spool.pending()
        return len(self._pending)

    def add(self, message: TerminalMessage, *, spooled: bool) -> None:
        """Queue ``message``; spool it first unless the caller already did."""
        if not spooled:
            try:
                self._spool.write(message)
            except OSError as exc:
                log.error("cannot spool the result of job %s: %s", message.job, exc)
        self._pending.append(message)

    @property
    def in_flight(self) -> TerminalMessage | None:
        return self._pending[0] if self._sent_at is not None else None

    def send_next(
        self, channel: Transport, now: float, send: Callable[[TerminalMessage], bool]
    ) -> None:
        """Send the oldest result if nothing is in flight and ``channel`` awaits no other reply
        (or SETTLE_TIMEOUT passed). ``send`` returns False if the channel was lost."""
        if not self._pending or self._sent_at is not None:
            return
        if channel.outstanding:
            if self._settle_deadline is None:
                self._settle_deadline = now + SETTLE_TIMEOUT
            if now < self._settle_deadline:
                return
            forgotten = channel.forget_outstanding()
            log.debug("no reply to %d earlier message(s); not waiting longer", forgotten)
        self._settle_deadline = None
        if send(self._pending[0]):
            self._sent_at = now

    def accept(self, ack: Ack) -> TerminalMessage | None:
        """The result this ``ack`` delivers (now removed from the spool), or None."""
        head = self.in_flight
        if head is None or ack.job not in (None, head.job):
            return None
        return self._forget_head()

    def refuse(self, error: Error) -> TerminalMessage | None:
        """The in-flight result, now dropped from the spool, when ``error`` refuses it (the
        server will never accept it); None when nothing is in flight or ``error`` answers
        another message (the result stays spooled until its own reply)."""
        head = self.in_flight
        if head is None or not refuses(error, head):
            return None
        return self._forget_head()

    def shrink_in_flight(self) -> TerminalMessage | None:
        """The server closed the channel because the in-flight result exceeded its message size
        limit (close code 1009): resending it would fail forever. Replace it, in the spool too,
        by a ``failed`` that keeps each iteration's exit code and says why the rest is gone."""
        head = self.in_flight
        if head is None or isinstance(head, Canceled):
            return None
        small: TerminalMessage = Failed(
            job=head.job,
            results=[IterationResult(exit_code=r.exit_code) for r in head.results],
            error="the result exceeded the server's message size limit "
            "(request_body_max_bytes): stdout, stderr and collected files were dropped",
        )
        if self._signer is not None and head.signature is not None:  # signed like the original
            small = self._signer.sign(small, head.nonce)
        try:
            self._spool.write(small)
        except OSError as exc:
            log.error("cannot spool the shrunk result of job %s: %s", head.job, exc)
        self._pending[0] = small
        return small

    def connection_lost(self) -> None:
        """The in-flight result (if any) is sent again on the next channel."""
        self._sent_at = None
        self._settle_deadline = None

    def overdue(self, now: float) -> bool:
        return self._sent_at is not None and now >= self._sent_at + ACK_TIMEOUT

    def deadline(self) -> float | None:
        if self._sent_at is not None:
            return self._sent_at + ACK_TIMEOUT
        return self._settle_deadline

    def _forget_head(self) -> TerminalMessage:
        message = self._pending.pop(0)
        self._sent_at = None
        try:
            self._spool.delete(message.job)
        except OSError as exc:
            log.error("cannot remove job %s from the spool: %s", message.job, exc)
        return message


def refuses(error: Error, result: TerminalMessage) -> bool:
    """Whether ``error`` is the refusal of ``result``, sent while nothing else awaits a reply."""
    event = error.refused_event()
    if event is None:
        return True  # a server before ``reply_to``, answering the result
    return event == result.event and error.job in (None, result.job)
