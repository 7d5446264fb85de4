"""How Bencher's runner binary reads what the server sends on its channel, as rules to check.

Written from the facts of Bencher's runner (its channel client and the ``bencher_json`` types it
deserializes with serde), not from our protocol module, so a change on our side cannot move
the yardstick:

- Every text frame is one ``ServerMessage``, internally tagged by ``event``: ``ack`` (optional
  ``job``, a UUID), ``job`` (the claimed job inline), ``no_job``, ``cancel``, ``update``
  (``version``, ``url``, ``checksum``). Any other ``event``, a missing one, or a field of the
  wrong type fails the whole message and the runner drops the connection. Fields it does not
  know are ignored.
- The claimed job: ``uuid``, ``spec``, ``config`` (an image job: ``registry`` a URL,
  ``project`` a UUID, ``digest`` ``sha256:`` and 64 hex, ``timeout``; optional ``entrypoint``,
  ``cmd``, ``file_paths`` string lists and ``env`` a string map), ``oci_token`` (a JWT),
  ``timeout`` and ``created``.
- The spec: ``uuid``, ``name``, ``slug``, ``os``, ``architecture``, ``cpu``, ``memory``,
  ``disk`` (integers, sizes in bytes), ``network``, ``created``, ``modified``; ``sandbox``,
  ``fallback`` and ``archived`` may be absent or null.
- A close frame's reason is read as a JSON string naming a close reason; anything else reads
  as no reason (not an error).
"""

from __future__ import annotations

import datetime as dt
import json
import re
import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import urlparse

CLOSE_REASONS = frozenset(
    {
        "job_completed",
        "job_failed",
        "job_canceled",
        "job_canceled_by_runner",
        "heartbeat_timeout",
        "job_timeout_exceeded",
    }
)
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_JWT = re.compile(r"[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*")
_U32 = 2**32 - 1
_U64 = 2**64 - 1


class Unreadable(AssertionError):
    """A server message Bencher's runner could not deserialize."""


def _require(ok: bool, what: str) -> None:
    if not ok:
        raise Unreadable(what)


def _is_int(value: object, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def _is_uuid(value: object) -> bool:
    if not isinstance(value, str):
        return False
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


def _is_datetime(value: object) -> bool:
    if not isinstance(value, str):
        return False
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        return False
    return parsed.tzinfo is not None


def _is_url(value: object) -> bool:
    return isinstance(value, str) and bool(urlparse(value).scheme) and "://" in value


def _is_strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _optional(check: Callable[[object], bool]) -> Callable[[object], bool]:
    return lambda value: value is None or check(value)


_SPEC: dict[str, Callable[[object], bool]] = {
    "uuid": _is_uuid,
    "name": lambda v: isinstance(v, str) and 0 < len(v) <= 64,
    "slug": lambda v: isinstance(v, str) and 0 < len(v) <= 64,
    "os": lambda v: v in ("linux", "macos", "windows"),
    "architecture": lambda v: v in ("x86_64", "aarch64"),
    "cpu": lambda v: _is_int(v, 1, _U32),
    "memory": lambda v: _is_int(v, 1, _U64),
    "disk": lambda v: _is_int(v, 1, _U64),
    "network": lambda v: isinstance(v, bool),
    "created": _is_datetime,
    "modified": _is_datetime,
}
_SPEC_OPTIONAL: dict[str, Callable[[object], bool]] = {
    "sandbox": _optional(lambda v: v == "firecracker"),
    "fallback": _optional(_is_datetime),
    "archived": _optional(_is_datetime),
}
_CONFIG: dict[str, Callable[[object], bool]] = {
    "registry": _is_url,
    "project": _is_uuid,
    "digest": lambda v: isinstance(v, str) and _DIGEST.fullmatch(v) is not None,
    "timeout": lambda v: _is_int(v, 1, _U32),
}
_CONFIG_OPTIONAL: dict[str, Callable[[object], bool]] = {
    "entrypoint": _optional(_is_strings),
    "cmd": _optional(_is_strings),
    "file_paths": _optional(_is_strings),
    "env": _optional(
        lambda v: (
            isinstance(v, dict)
            and all(isinstance(k, str) and isinstance(x, str) for k, x in v.items())
        )
    ),
}


def _fields(
    obj: object,
    where: str,
    required: dict[str, Callable[[object], bool]],
    optional: dict[str, Callable[[object], bool]],
) -> None:
    _require(isinstance(obj, dict), f"{where} is not an object: {obj!r}")
    assert isinstance(obj, dict)
    for name, check in required.items():
        _require(name in obj, f"{where}.{name} is missing")
        _require(check(obj[name]), f"{where}.{name} = {obj[name]!r} does not parse")
    for name, check in optional.items():
        _require(check(obj.get(name)), f"{where}.{name} = {obj.get(name)!r} does not parse")


def _job(message: dict[str, Any]) -> None:
    _fields(
        message,
        "job",
        {
            "uuid": _is_uuid,
            "oci_token": lambda v: isinstance(v, str) and _JWT.fullmatch(v) is not None,
            "timeout": lambda v: _is_int(v, 1, _U32),
            "created": _is_datetime,
        },
        {},
    )
    _fields(message.get("spec"), "job.spec", _SPEC, _SPEC_OPTIONAL)
    _fields(message.get("config"), "job.config", _CONFIG, _CONFIG_OPTIONAL)


def read_server_message(text: str) -> dict[str, Any]:
    """The message as Bencher's runner would take it; raises ``Unreadable`` where it fails."""
    try:
        message = json.loads(text)
    except json.JSONDecodeError as exc:
        raise Unreadable(f"not JSON: {text[:80]!r}") from exc
    _require(isinstance(message, dict), f"not an object: {text[:80]!r}")
    event = message.get("event")
    if event == "ack":
        _require(_optional(_is_uuid)(message.get("job")), f"ack.job does not parse: {message}")
    elif event == "job":
        _job(message)
    elif event == "update":
        _fields(
            message,
            "update",
            {
                "version": lambda v: isinstance(v, str),
                "url": _is_url,
                "checksum": lambda v: isinstance(v, str) and _SHA256.fullmatch(v) is not None,
            },
            {},
        )
    else:
        _require(event in ("no_job", "cancel"), f"unknown event {event!r}: {message}")
    return dict(message)


def read_close_reason(reason: str) -> str | None:
    """The close reason Bencher's runner reads from a close frame; None: no reason."""
    try:
        value = json.loads(reason)
    except json.JSONDecodeError:
        return None
    return value if value in CLOSE_REASONS else None
