"""The server's log: one line per record, job/runner/transition fields appended as
``key=value``, secrets redacted from every line at every level, whoever logged it."""

from __future__ import annotations

import logging

from benchrunner.core.redaction import redact

FIELDS = ("job", "runner", "from", "to", "tier", "error")

_INVALID_UTF8 = "Invalid UTF-8 sequence received from client."
"""uvicorn logs this with a traceback when a client sends a text frame that is not UTF-8; it is
the client's error (answered with close code 1007), not the server's."""
_DENIED_HANDSHAKE = "ASGI callable returned without completing handshake."
"""uvicorn's websockets-sansio logs this error after every 401 of the channel handshake, though
the client got its 401 (Kludex/uvicorn#3138, open); the only way our app returns before the
handshake is that denial, already logged as ``"WebSocket ..." 401``."""


class FieldsFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        extras = [
            f"{k}={getattr(record, k)}" for k in FIELDS if getattr(record, k, None) is not None
        ]
        # Redacting the finished line covers the message, its arguments, the extra fields and
        # any traceback alike.
        return redact(f"{line} {' '.join(extras)}" if extras else line)


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
    handler.setFormatter(FieldsFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(ClientErrorsWithoutTraceback())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
