"""Secrets never reach a log line: the redaction every server log record goes through."""

from __future__ import annotations

import io
import json
import logging
import sys

import pytest

from benchrunner.core.redaction import REDACTION_VERSION, JobLogRedactor, redact, secret_values
from benchrunner.core.tokens import new_api_token, new_runner_token
from benchrunner.server.logs.server_log import ClientErrorsWithoutTraceback, JsonFormatter

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
    # Named: the keys are random, and parallel test workers must collect the same test ids.
    ids=["runner-key-header", "api-token-header", "basic", "runner-key", "api-token", "jwt", "url"],
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


# ---------------------------------------------------------------- job logs (redacted on read)


@pytest.mark.parametrize(
    ("line", "secret", "kept"),
    [
        ("OPENAI_API_KEY=sk-proj-abcdefghijklmnop1234", "abcdefghijklmnop1234", "=sk-[redacted]"),
        ("key sk-ant-api03-xyzXYZ0123456789_-", "xyzXYZ0123456789", "key sk-[redacted]"),
        (
            "posting to https://hooks.slack.com/services/T00/B00/XXXXXXXX done",
            "T00/B00/XXXXXXXX",
            "https://hooks.slack.com/[redacted] done",
        ),
        (
            "hook https://discord.com/api/webhooks/123/tok-EN",
            "123/tok-EN",
            "https://discord.com/api/webhooks/[redacted]",
        ),
        (
            "https://example.com/hooks/abc123secret",
            "abc123secret",
            "https://example.com/hooks/[redacted]",
        ),
        ("curl -H 'Authorization: Bearer abc.def-ghi'", "abc.def-ghi", "Authorization: [redacted]"),
        ("using Bearer abcdefghijkl", "abcdefghijkl", "Bearer [redacted]"),
    ],
)
def test_job_log_secrets_are_redacted(line: str, secret: str, kept: str) -> None:
    redacted = JobLogRedactor()(line)
    assert secret not in redacted
    assert kept in redacted


@pytest.mark.parametrize(
    "line",
    [
        "sk-short",  # too short to be a key
        "https://example.com/docs/hooks-guide.html",  # a page about hooks, not a hook
        "the bearer of bad news",
        "risk-free ask-me-anything",
    ],
)
def test_job_log_ordinary_text_is_kept(line: str) -> None:
    assert JobLogRedactor()(line) == line


def test_secret_looking_environment_values_are_found_by_name_or_by_shape() -> None:
    env = {
        "DB_PASSWORD": "hunter22",
        "SLACK_WEBHOOK": "https://x.example/y",
        "API_KEY": "abc",  # too short to redact everywhere
        "RANDOM_BLOB": "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5",  # token-like, whatever its name
        "HOME": "/root",
        "MODE": "fast",
        "GREETING": "hello world, how are you today",  # long, but words
    }
    assert secret_values(env) == [
        "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5",
        "https://x.example/y",
        "hunter22",
    ]
    assert secret_values(None) == []


def test_a_job_log_redactor_replaces_its_values_longest_first() -> None:
    redactor = JobLogRedactor(["hunter22", "hunter22-extended"])
    assert redactor("a hunter22-extended b hunter22 c") == "a [redacted] b [redacted] c"
    assert redactor(f"key {RUNNER_KEY}") == "key bencher_runner_[redacted]"


def test_the_redaction_is_versioned() -> None:
    assert isinstance(REDACTION_VERSION, int) and REDACTION_VERSION >= 1
