"""What the agent's main loop reacts to. Every thread posts these into one queue; only the main
thread changes the agent's state, so the protocol logic needs no locks."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from benchrunner.protocol import Ack, Cancel, Error, JobAssigned, NoJob, TerminalMessage, Update

ServerMessage = Ack | JobAssigned | NoJob | Cancel | Update | Error


@dataclass(frozen=True)
class ServerEvent:
    """A valid message received on channel ``generation``."""

    generation: int
    message: ServerMessage


@dataclass(frozen=True)
class ChannelLost:
    """Channel ``generation`` closed with WebSocket close ``code`` (1006: no close frame)."""

    generation: int
    code: int
    reason: str


@dataclass(frozen=True)
class TransportRefused:
    """The server refused the runner on ``generation`` for good (HTTP 401/403/404)."""

    generation: int
    message: str


@dataclass(frozen=True)
class JobStarted:
    """Setup done, the first iteration is about to start: time to send ``running``."""

    job: uuid.UUID


@dataclass(frozen=True)
class JobFinished:
    """The job thread ended; ``message`` is already in the spool."""

    job: uuid.UUID
    message: TerminalMessage
    duration: float


@dataclass(frozen=True)
class DrainRequested:
    """SIGTERM/SIGINT (or ``Agent.request_drain``): the first drains, the second cancels."""


AgentEvent = (
    ServerEvent | ChannelLost | TransportRefused | JobStarted | JobFinished | DrainRequested
)
