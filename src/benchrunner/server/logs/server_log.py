"""The server's log: one JSON object per line, through structlog, whoever logged the record
(our modules, uvicorn, websockets, SQLAlchemy). Secrets are redacted from every value at every
level; only the fields this server fills itself with values it generated (job UUID, statuses,
tier, duration, time, level, logger) skip the redaction, which keeps a transition's line cheap.

A line: ``{"timestamp": "...", "level": "info", "logger": "benchrunner.transitions",
"event": "job running", "job": "...", "runner": "...", "status_from": "claimed",
"status_to": "running", "duration_ms": 12, "tier": "team"}``.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import time
from collections.abc import Callable, MutableMapping
from typing import Any

import structlog

from benchrunner.core.redaction import redact

_TRUSTED = frozenset(
    {"timestamp", "level", "logger", "job", "status_from", "status_to", "duration_ms", "tier"}
)

_INVALID_UTF8 = "Invalid UTF-8 sequence received from client."
"""uvicorn logs this with a traceback when a client sends a text frame that is not UTF-8; it is
the client's error (answered with close code 1007), not the server's."""
_DENIED_HANDSHAKE = "ASGI callable returned without completing handshake."
"""uvicorn's websockets-sansio logs this error after every 401 of the channel handshake, though
the client got its 401 (Kludex/uvicorn#3138, open); the only way our app returns before the
handshake is that denial, already logged as ``"WebSocket ..." 401``."""


def redact_values(
    _logger: Any, _method: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """Every value but the trusted fields, redacted; fields left empty are dropped."""
    for key in list(event_dict):
        value = event_dict[key]
        if value is None:
            del event_dict[key]
        elif key in _TRUSTED or isinstance(value, bool | int | float):
            continue
        else:
            event_dict[key] = redact(value if isinstance(value, str) else str(value))
    return event_dict


_NOT_FIELDS = frozenset(
    [
        *logging.LogRecord("", 0, "", 0, "", None, None).__dict__,
        "message",
        "asctime",
        "color_message",  # uvicorn's copy of the message with terminal colours
    ]
)


class UtcStamp:
    """The time now as structlog's ``TimeStamper(fmt="iso", utc=True)`` writes it
    (``2026-11-28T06:30:06.651408Z``; no fraction at a whole second), with the part up to the
    second formatted once per second: ``isoformat`` per line was a fifth of a line's cost."""

    def __init__(self, clock: Callable[[], int] = time.time_ns) -> None:
        self._clock = clock
        """Nanoseconds since the epoch."""
        self._second: tuple[int, str] = (-1, "")
        """The last second seen and its text, replaced whole so that threads share it safely."""

    def __call__(self) -> str:
        second, nanoseconds = divmod(self._clock(), 1_000_000_000)
        cached = self._second
        if cached[0] != second:
            text = dt.datetime.fromtimestamp(second, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S")
            cached = self._second = (second, text)
        microseconds = nanoseconds // 1000
        return f"{cached[1]}.{microseconds:06d}Z" if microseconds else f"{cached[1]}Z"


def _fallback(value: Any) -> Any:
    """What structlog's ``JSONRenderer`` writes for a value JSON has no type for."""
    structlog_form = getattr(value, "__structlog__", None)
    return structlog_form() if structlog_form is not None else repr(value)


class JsonFormatter(logging.Formatter):
    """A stdlib record as a JSON line, as structlog's ``TimeStamper``, ``format_exc_info`` and
    ``JSONRenderer`` with ``redact_values`` between them would write it.

    The record's own fields become the event; its ``extra`` fields are added as they are. (Not
    structlog's ``ProcessorFormatter``: it copies every record, which costs a third more; and
    not its processors one by one: a stamp per second and one JSON encoder built once make a
    line cost half.)"""

    def __init__(self, stamp: UtcStamp | None = None) -> None:
        super().__init__()
        self._stamp = stamp or UtcStamp()
        self._encode = json.JSONEncoder(default=_fallback).encode

    def format(self, record: logging.LogRecord) -> str:
        level = record.levelname.lower()
        event: Any = {
            "event": record.getMessage(),
            "level": level,
            "logger": record.name,
        }
        for key, value in record.__dict__.items():
            if key not in _NOT_FIELDS:
                event[key] = value
        event["timestamp"] = self._stamp()
        if record.exc_info:
            event["exc_info"] = record.exc_info
            event = structlog.processors.format_exc_info(None, level, event)
        return self._encode(redact_values(None, level, event))


class ClientErrorsWithoutTraceback(logging.Filter):
    """A hostile client's bad frame is a warning of one line, not an error with a traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name != "uvicorn.error":
            return True
        if record.msg == _INVALID_UTF8:
            record.msg = "a client sent a text message that is not UTF-8; closed with 1007"
            record.exc_info, record.exc_text = None, None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        elif record.msg == _DENIED_HANDSHAKE:
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
            return logging.getLogger().isEnabledFor(logging.DEBUG)
        return True


def configure(level: str) -> None:
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter())
    handler.addFilter(ClientErrorsWithoutTraceback())
    # Fields no line shows, which every record would otherwise look up (the logging HOWTO's
    # optimisations): the caller's source position, thread, process.
    logging._srcfile = None
    logging.logThreads = logging.logProcesses = logging.logMultiprocessing = False
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
