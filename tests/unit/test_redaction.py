"""Secrets never reach a log line: the redaction every server log record goes through."""

from __future__ import annotations

import io
import json
import logging
import sys

import pytest

from benchrunner.core.redaction import redact
from benchrunner.core.tokens import new_api_token, new_runner_token
from benchrunner.server.logs import ClientErrorsWithoutTraceback, JsonFormatter

RUNNER_KEY = new_runner_token()
API_TOKEN = new_api_token()
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJydW5uZXIifQ.c2lnbmF0dXJlLXNpZ25hdHVyZQ"


@pytest.mark.parametrize(
    ("line", "secret", "kept"),
    [
        (f"< authorization: Bearer {RUNNER_KEY}", RUNNER_KEY, "< authorization: [redacted]"),
        (f"{{'authorization': 'Bearer {API_TOKEN}'}}", API_TOKEN, "'Bearer [redacted]'"),
        ("Authorization: Basic bWU6cGFzc3dvcmQxMjM=", "bWU6cGFzc3dvcmQxMjM=", "Authorization:"),
        (f"runner key {RUNNER_KEY} given", RUNNER_KEY, "bencher_runner_[redacted] given"),
        (f"token={API_TOKEN}", API_TOKEN, "benchrunner_api_[redacted]"),
        (f"pull token {JWT} issued", JWT, "pull token [redacted] issued"),
        ("db postgresql://bench:s3cret@db/bench", "s3cret", "postgresql://bench:[redacted]@db"),
    ],
)
def test_secrets_are_redacted(line: str, secret: str, kept: str) -> None:
    redacted = redact(line)
    assert secret not in redacted
    assert kept in redacted


@pytest.mark.parametrize(
    "line",
    [
        "job 2edfd04e-2173-48a9-a93e-373fc7960a16 runner=leaky from=claimed to=running",
        "basic setup done; bearer tokens are checked",
        'WWW-Authenticate: Bearer realm="http://x/v0/auth/oci/token",service="x"',
    ],
)
def test_ordinary_lines_are_left_alone(line: str) -> None:
    assert redact(line) == line


def _formatted(record: logging.LogRecord) -> str:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(ClientErrorsWithoutTraceback())
    handler.handle(record)
    return stream.getvalue()


def test_the_formatter_redacts_arguments_extras_and_tracebacks() -> None:
    try:
        raise ValueError(f"bad header Bearer {RUNNER_KEY}")
    except ValueError:
        record = logging.LogRecord(
            "uvicorn.error",
            logging.DEBUG,
            __file__,
            1,
            "< %s",
            (f"authorization: {API_TOKEN}",),
            exc_info=sys.exc_info(),
        )
    record.error = f"key {RUNNER_KEY}"
    line = _formatted(record)
    assert RUNNER_KEY not in line and API_TOKEN not in line
    fields = json.loads(line)
    assert "Traceback" in fields["exception"] and fields["error"] == "key bencher_runner_[redacted]"
    assert fields["event"] == "< authorization: [redacted]"


def test_invalid_utf8_from_a_client_is_one_warning_line() -> None:
    try:
        b"\xff".decode()
    except UnicodeDecodeError:
        record = logging.LogRecord(
            "uvicorn.error",
            logging.ERROR,
            __file__,
            1,
            "Invalid UTF-8 sequence received from client.",
            None,
            exc_info=sys.exc_info(),
        )
    line = _formatted(record)
    fields = json.loads(line)
    assert (fields["level"], fields["logger"]) == ("warning", "uvicorn.error")
    assert "1007" in fields["event"] and "exception" not in fields
    assert len(line.splitlines()) == 1


def test_a_denied_channel_handshake_is_not_an_error() -> None:
    record = logging.LogRecord(
        "uvicorn.error",
        logging.ERROR,
        __file__,
        1,
        "ASGI callable returned without completing handshake.",
        None,
        None,
    )
    root = logging.getLogger()
    level = root.level
    try:
        root.setLevel(logging.INFO)
        assert _formatted(record) == ""  # a debug line now, below the server's level
        root.setLevel(logging.DEBUG)
        fields = json.loads(_formatted(record))
        assert fields["level"] == "debug" and fields["event"].startswith("ASGI callable returned")
    finally:
        root.setLevel(level)
