"""The server's log: one JSON object per line, through structlog, whoever logged the record
(our modules, uvicorn, websockets, SQLAlchemy). Secrets are redacted from every value at every
level; only the fields this server fills itself with values it generated (job UUID, statuses,
tier, duration, time, level, logger) skip the redaction, which keeps a transition's line cheap.

A line: ``{"timestamp": "...", "level": "info", "logger": "benchrunner.transitions",
"event": "job running", "job": "...", "runner": "...", "status_from": "claimed",
"status_to": "running", "duration_ms": 12, "tier": "team"}``.
"""

from __future__ import annotations

import logging
from collections.abc import MutableMapping
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


class JsonFormatter(logging.Formatter):
    """A stdlib record as a JSON line through structlog's processors.

    The record's own fields become the event; its ``extra`` fields are added as they are. (Not
    structlog's ``ProcessorFormatter``: it copies every record, which costs a third more.)"""

    def __init__(self) -> None:
        super().__init__()
        self._processors: list[Any] = [
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            redact_values,
            structlog.processors.JSONRenderer(),
        ]

    def format(self, record: logging.LogRecord) -> str:
        event: Any = {
            "event": record.getMessage(),
            "level": record.levelname.lower(),
            "logger": record.name,
        }
        for key, value in record.__dict__.items():
            if key not in _NOT_FIELDS:
                event[key] = value
        if record.exc_info:
            event["exc_info"] = record.exc_info
        for processor in self._processors:
            event = processor(None, record.levelname.lower(), event)
        line: str = event
        return line


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
