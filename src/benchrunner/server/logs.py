"""Log lines with the job, runner and transition fields appended as ``key=value``."""

from __future__ import annotations

import logging

FIELDS = ("job", "runner", "from", "to", "tier", "error")


class FieldsFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        extras = [
            f"{k}={getattr(record, k)}" for k in FIELDS if getattr(record, k, None) is not None
        ]
        return f"{line} {' '.join(extras)}" if extras else line


def configure(level: str) -> None:
    handler = logging.StreamHandler()
    handler.setFormatter(FieldsFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
