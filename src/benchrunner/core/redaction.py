"""Secrets out of text bound for a log line or a job's log.

Libraries log what they see: the WebSocket handshake at debug level prints every request header,
the runner's ``Authorization: Bearer bencher_runner_…`` included. ``redact`` replaces, wherever
they appear: an ``Authorization`` header's value, ``Bearer``/``Basic`` credentials, runner keys
and API tokens of this server (by their prefixes, ``core.tokens``), ``sk-…`` API keys, JWTs
(registry and runner pull tokens), webhook URLs (kept up to the hook's path) and the password of
a URL (``postgresql://user:password@host``).

A job's log is redacted when it is read, never on disk (docs/decisions/live-logs.md):
``JobLogRedactor`` adds the values of the job's environment variables that look secret
(``secret_values``). What is replaced is versioned: ``REDACTION_VERSION`` changes whenever a pattern
does, since log offsets are counted on the redacted text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from benchrunner.core.tokens import API_TOKEN_PREFIX, RUNNER_TOKEN_PREFIX

REDACTION_VERSION = 1
REDACTED = "[redacted]"

_URL_PART = r"[^\s'\"<>]"
_SECRETS = re.compile(
    r"(?P<header>\b(?:proxy-)?authorization\s*[:=]\s*)[^\r\n'\",}]+"
    r"|(?P<scheme>\b(?:bearer|basic)\s+)[A-Za-z0-9._~+/=-]{8,}"
    rf"|(?P<token>{re.escape(RUNNER_TOKEN_PREFIX)}|{re.escape(API_TOKEN_PREFIX)})[0-9A-Za-z]+"
    r"|(?P<key>\bsk-)[A-Za-z0-9_-]{16,}"
    r"|\beyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*"
    rf"|(?P<hook>\bhttps?://(?:[^/\s'\"<>@]*hook[^/\s'\"<>]*/"
    rf"|[^/\s'\"<>]+/(?:{_URL_PART}*?/)?(?:web)?hooks?/)){_URL_PART}+"
    r"|(?P<userinfo>://[^/\s:@]+:)[^/\s@]+@",
    re.IGNORECASE,
)

_SECRET_NAME = re.compile(
    r"secret|token|passw|pwd|key|credential|auth|private|signature|cookie|session|dsn|hook",
    re.IGNORECASE,
)
MIN_NAMED_SECRET = 6
"""A value under a secret-sounding name shorter than this is left alone: redacting ``abc``
everywhere would blank ordinary words, and so short a secret guards nothing."""
_TOKEN_LIKE = re.compile(r"(?=[^\s]*[A-Za-z])(?=[^\s]*[0-9])[A-Za-z0-9+/=_.~-]{20,}")


def _replace(match: re.Match[str]) -> str:
    for keep in ("header", "scheme", "token", "key", "hook"):
        if match[keep] is not None:
            return f"{match[keep]}{REDACTED}"
    if match["userinfo"] is not None:
        return f"{match['userinfo']}{REDACTED}@"
    return REDACTED


_CLUES = (
    "authorization",
    "bearer",
    "basic",
    RUNNER_TOKEN_PREFIX.lower(),
    API_TOKEN_PREFIX.lower(),
    "sk-",
    "eyj",
    "://",
)
"""Text in which ``_SECRETS`` can match holds one of these (in any case): the pattern is only run
where it can find something, which is rare, and it costs far more than this search."""
_CLUE = re.compile("|".join(map(re.escape, _CLUES)), re.IGNORECASE)


def redact(text: str) -> str:
    """``text`` with every secret it carries replaced by ``[redacted]`` (prefixes are kept, so
    a log still tells a runner key from an API token)."""
    return _SECRETS.sub(_replace, text) if _CLUE.search(text) else text


def secret_values(env: Mapping[str, str] | None) -> list[str]:
    """The values of ``env`` that look secret: under a name that says so (``API_KEY``,
    ``DB_PASSWORD``, ``SLACK_WEBHOOK``…) and at least ``MIN_NAMED_SECRET`` characters long, or
    token-like whatever the name (20 or more letters and digits, no space)."""
    found = {
        value
        for name, value in (env or {}).items()
        if (_SECRET_NAME.search(name) and len(value) >= MIN_NAMED_SECRET)
        or _TOKEN_LIKE.fullmatch(value)
    }
    return sorted(found)


class JobLogRedactor:
    """Redacts one job's log: its secret values first (longest first, so a value containing
    another is replaced whole), then every pattern of ``redact``. Deterministic for a given
    ``REDACTION_VERSION`` and set of values."""

    def __init__(self, values: Iterable[str] = ()) -> None:
        ordered = sorted(set(values), key=lambda value: (-len(value), value))
        self._ordered = ordered
        self._values = re.compile("|".join(map(re.escape, ordered))) if ordered else None

    def __call__(self, text: str) -> str:
        if self._values is not None and any(value in text for value in self._ordered):
            text = self._values.sub(REDACTED, text)
        return redact(text)
