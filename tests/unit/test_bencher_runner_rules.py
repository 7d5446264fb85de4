"""The yardstick of the conformance test refuses what Bencher's runner cannot read."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.bencher_runner_rules import Unreadable, read_close_reason, read_server_message

UUID = "550e8400-e29b-41d4-a716-446655440000"
JOB: dict[str, Any] = {
    "event": "job",
    "uuid": UUID,
    "spec": {
        "uuid": UUID,
        "name": "small",
        "slug": "small",
        "os": "linux",
        "architecture": "x86_64",
        "cpu": 2,
        "memory": 1 << 30,
        "disk": 1 << 34,
        "network": False,
        "created": "2026-01-01T00:00:00Z",
        "modified": "2026-01-01T00:00:00Z",
    },
    "config": {
        "registry": "http://127.0.0.1:8080",
        "project": UUID,
        "digest": "sha256:" + "a" * 64,
        "timeout": 60,
    },
    "oci_token": "eyJh.eyJz.c2ln",
    "timeout": 60,
    "created": "2026-01-01T00:00:00Z",
}


def _with(path: tuple[str, ...], value: object) -> str:
    message = json.loads(json.dumps(JOB))
    target = message
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return json.dumps(message)


def test_a_bencher_job_message_reads() -> None:
    assert read_server_message(json.dumps(JOB))["uuid"] == UUID
    assert read_server_message(_with(("nonce",), "n")) is not None  # unknown fields: ignored
    assert read_server_message(_with(("spec", "sandbox"), "firecracker")) is not None


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("spec", "os"), KeyError),
        (("spec", "os"), "Linux"),
        (("spec", "memory"), 1.5),
        (("spec", "cpu"), True),
        (("spec", "disk"), "1024"),
        (("spec", "sandbox"), "gvisor"),
        (("spec", "fallback"), "yesterday"),
        (("config", "registry"), "127.0.0.1"),
        (("config", "digest"), "sha256:abc"),
        (("config", "project"), KeyError),
        (("oci_token",), "opaque"),
        (("created",), "2026-01-01T00:00:00"),
    ],
)
def test_a_job_message_bencher_cannot_read_is_refused(path: tuple[str, ...], value: object) -> None:
    with pytest.raises(Unreadable):
        read_server_message(_with(path, value))


@pytest.mark.parametrize(
    "text",
    [
        '{"event": "error", "message": "x"}',
        '{"job": "' + UUID + '"}',
        '{"event": "ack", "job": "not a uuid"}',
        '{"event": "update", "version": "1", "url": "x", "checksum": "y"}',
        "[]",
        "{",
    ],
)
def test_other_messages_bencher_cannot_read(text: str) -> None:
    with pytest.raises(Unreadable):
        read_server_message(text)


@pytest.mark.parametrize(
    ("reason", "read"),
    [
        ('"heartbeat_timeout"', "heartbeat_timeout"),
        ('"job_timeout_exceeded"', "job_timeout_exceeded"),
        ("heartbeat_timeout", None),
        ('"superseded"', None),
        ("", None),
    ],
)
def test_close_reasons_are_json_strings(reason: str, read: str | None) -> None:
    assert read_close_reason(reason) == read
