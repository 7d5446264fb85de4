"""How the agent talks to the server: the channel (``channel.py``) or the older
per-job transport (``per_job.py``). The agent, the heartbeat, the live log and the outbox see
only a ``Transport``; both post the server's answers as ``ServerEvent``s in the same order the
messages went out, and the loss of the connection as one ``ChannelLost``."""

from __future__ import annotations

import threading
from typing import Literal, Protocol

from pydantic import BaseModel

TransportName = Literal["channel", "per-job"]
TRANSPORTS: tuple[TransportName, ...] = ("channel", "per-job")


def transport_name(value: str) -> TransportName:
    """``value`` as a transport's name; raises ValueError naming the choices."""
    for name in TRANSPORTS:
        if value == name:
            return name
    raise ValueError(f"transport must be one of {', '.join(TRANSPORTS)}, not {value!r}")


class Transport(Protocol):
    generation: int
    """Which connection of the agent this is: events of older ones are ignored."""
    verified: bool
    """The server accepted the runner on opening (the channel's handshake); the per-job
    transport learns it from the first answer."""

    @property
    def outstanding(self) -> int: ...

    def send(self, message: BaseModel, *, expect_ack: bool = False) -> None:
        """Send one protocol message; raises ChannelClosedError if the connection is gone."""

    def settle_one(self) -> bool: ...

    def forget_outstanding(self) -> int: ...

    def close(self, code: int = 1000, reason: str = "") -> None: ...


class CountedReplies:
    """Messages sent with ``expect_ack`` whose ``ack``/``error`` has not been seen yet; the
    server answers in order, so the agent knows which reply answers what
    (docs/decisions/channel.md)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        """Held while sending, so that a send and its count are one step."""
        self._outstanding = 0

    @property
    def outstanding(self) -> int:
        with self._lock:
            return self._outstanding

    def settle_one(self) -> bool:
        """Count one reply against the oldest outstanding message; False if none was."""
        with self._lock:
            if self._outstanding == 0:
                return False
            self._outstanding -= 1
            return True

    def forget_outstanding(self) -> int:
        """Stop waiting for replies the server is not going to send; returns how many."""
        with self._lock:
            count, self._outstanding = self._outstanding, 0
            return count
