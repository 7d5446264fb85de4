"""Secrets out of text bound for a log line.

Libraries log what they see: the WebSocket handshake at debug level prints every request header,
the runner's ``Authorization: Bearer bencher_runner_…`` included. ``redact`` replaces, wherever
they appear: an ``Authorization`` header's value, ``Bearer``/``Basic`` credentials, runner keys
and API tokens (by their prefixes, ``core.tokens``), JWTs (registry and runner pull tokens) and
the password of a URL (``postgresql://user:password@host``).
"""

from __future__ import annotations

import re

from benchrunner.core.tokens import API_TOKEN_PREFIX, RUNNER_TOKEN_PREFIX

REDACTED = "[redacted]"

_SECRETS = re.compile(
    r"(?P<header>\b(?:proxy-)?authorization\s*[:=]\s*)[^\r\n'\",}]+"
    r"|(?P<scheme>\b(?:bearer|basic)\s+)[A-Za-z0-9._~+/=-]{8,}"
    rf"|(?P<token>{re.escape(RUNNER_TOKEN_PREFIX)}|{re.escape(API_TOKEN_PREFIX)})[0-9A-Za-z]+"
    r"|\beyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*"
    r"|(?P<userinfo>://[^/\s:@]+:)[^/\s@]+@",
    re.IGNORECASE,
)


def _replace(match: re.Match[str]) -> str:
    for keep in ("header", "scheme", "token"):
        if match[keep] is not None:
            return f"{match[keep]}{REDACTED}"
    if match["userinfo"] is not None:
        return f"{match['userinfo']}{REDACTED}@"
    return REDACTED


def redact(text: str) -> str:
    """``text`` with every secret it carries replaced by ``[redacted]`` (prefixes are kept, so
    a log still tells a runner key from an API token)."""
    return _SECRETS.sub(_replace, text)
