"""The server's JSON log line is what structlog's processors would write (``TimeStamper`` in ISO
UTC, ``format_exc_info``, the redaction, ``JSONRenderer``), byte for byte, though the formatter
does their work itself."""

from __future__ import annotations

import datetime as dt
import json
import logging
import sys
from pathlib import Path
from typing import Any

import pytest
import structlog

from benchrunner.core.tokens import new_runner_token
from benchrunner.server.logs import server_log as logs
from benchrunner.server.logs.server_log import JsonFormatter, UtcStamp, redact_values


class Described:
    def __structlog__(self) -> str:
        return "described"


def structlog_line(record: logging.LogRecord, stamp: str) -> str:
    """The line structlog's own processors make of ``record``, stamped ``stamp``."""
    level = record.levelname.lower()
    event: Any = {"event": record.getMessage(), "level": level, "logger": record.name}
    for key, value in record.__dict__.items():
        if key not in logs._NOT_FIELDS:
            event[key] = value
    event["timestamp"] = stamp
    if record.exc_info:
        event["exc_info"] = record.exc_info
    for processor in (
        structlog.processors.format_exc_info,
        redact_values,
        structlog.processors.JSONRenderer(),
    ):
        event = processor(None, level, event)
    return str(event)


def records() -> list[logging.LogRecord]:
    plain = logging.LogRecord(
        "benchrunner.transitions", logging.INFO, "", 0, "job %s", ("x",), None
    )
    for key, value in {
        "job": "0b6f0f9e-1111-4222-8333-944444444444",
        "runner": "runner-one",
        "status_from": "claimed",
        "status_to": "running",
        "duration_ms": 12,
        "tier": "team",
        "reason": None,
    }.items():
        setattr(plain, key, value)
    odd = logging.LogRecord("uvicorn.error", logging.WARNING, "", 0, "odd %r", (b"\xff",), None)
    odd.path, odd.described, odd.ratio, odd.flag = Path("/tmp/ü"), Described(), 0.5, True
    odd.secret = f"key {new_runner_token()}"
    try:
        raise ValueError("boom")
    except ValueError:
        failed = logging.LogRecord(
            "benchrunner.server", logging.ERROR, "", 0, "failed", None, sys.exc_info()
        )
    return [plain, odd, failed]


@pytest.mark.parametrize("record", records(), ids=["transition", "odd values", "traceback"])
def test_a_line_is_what_structlogs_processors_write(record: logging.LogRecord) -> None:
    formatter = JsonFormatter(UtcStamp(lambda: 1_764_311_406_651_408_123))
    line = formatter.format(record)
    assert line == structlog_line(record, "2025-11-28T06:30:06.651408Z")
    assert json.loads(line)["timestamp"] == "2025-11-28T06:30:06.651408Z"


@pytest.mark.parametrize(
    "nanoseconds", [1_764_311_406_000_000_000, 1_764_311_406_000_001_000, 1_764_311_399_999_999_999]
)
def test_a_stamp_is_the_iso_form_structlog_writes(nanoseconds: int) -> None:
    stamp = UtcStamp(lambda: nanoseconds)
    moment = dt.datetime.fromtimestamp(nanoseconds // 1000 / 1e6, dt.UTC)
    expected = moment.isoformat().replace("+00:00", "Z")
    assert stamp() == expected
    assert stamp() == expected  # the second's text, now from its cache


def test_a_stamp_moves_on_with_the_second() -> None:
    now = [1_764_311_406_999_999_000]
    stamp = UtcStamp(lambda: now[0])
    assert stamp() == "2025-11-28T06:30:06.999999Z"
    now[0] += 2_000
    assert stamp() == "2025-11-28T06:30:07.000001Z"
