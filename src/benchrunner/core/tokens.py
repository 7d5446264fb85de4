"""Token formats: runner tokens as docs/decisions/runner-tokens.md (``bencher_runner_`` + 64 hex),
or as Bencher issues runner keys today (``bencher_runner_`` + 30 ASCII letters and digits, the only
form Bencher's runner binary accepts); user API tokens in the same shape.

Only the SHA-256 hex digest of a token is ever stored, so both runner forms are found by the
same lookup.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import string
from typing import Literal

RUNNER_TOKEN_PREFIX = "bencher_runner_"  # noqa: S105 - a prefix, not a secret
API_TOKEN_PREFIX = "benchrunner_api_"  # noqa: S105 - a prefix, not a secret
_HEX64 = re.compile(r"[0-9a-f]{64}")
BENCHER_KEY_CHARACTERS = string.ascii_letters + string.digits
BENCHER_KEY_LENGTH = 30
"""Characters after the prefix in Bencher's own runner keys (about 178 bits)."""
_BENCHER_KEY = re.compile(f"[A-Za-z0-9]{{{BENCHER_KEY_LENGTH}}}")
RunnerKeyFormat = Literal["hex", "bencher"]


def new_runner_token(key_format: RunnerKeyFormat = "hex") -> str:
    """A new runner token: the hex form unless ``key_format`` is ``"bencher"``."""
    if key_format == "bencher":
        body = "".join(secrets.choice(BENCHER_KEY_CHARACTERS) for _ in range(BENCHER_KEY_LENGTH))
        return RUNNER_TOKEN_PREFIX + body
    return RUNNER_TOKEN_PREFIX + secrets.token_hex(32)


def new_api_token() -> str:
    return API_TOKEN_PREFIX + secrets.token_hex(32)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _well_formed(token: str, prefix: str) -> bool:
    return (
        len(token) == len(prefix) + 64
        and token.startswith(prefix)
        and _HEX64.fullmatch(token[len(prefix) :]) is not None
    )


def is_runner_token(token: str) -> bool:
    """Prefix ``bencher_runner_`` and then 64 lowercase hex characters
    (docs/decisions/runner-tokens.md) or 30 ASCII letters and digits (Bencher's key)."""
    if _well_formed(token, RUNNER_TOKEN_PREFIX):
        return True
    body = token[len(RUNNER_TOKEN_PREFIX) :]
    return token.startswith(RUNNER_TOKEN_PREFIX) and _BENCHER_KEY.fullmatch(body) is not None


def is_api_token(token: str) -> bool:
    return _well_formed(token, API_TOKEN_PREFIX)


def bearer(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, or None."""
    if not authorization:
        return None
    scheme, _, value = authorization.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()
