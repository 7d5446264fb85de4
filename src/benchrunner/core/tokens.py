"""Token formats: runner tokens exactly as seed 000, user API tokens in the same shape.

Only the SHA-256 hex digest of a token is ever stored.
"""

from __future__ import annotations

import hashlib
import re
import secrets

RUNNER_TOKEN_PREFIX = "bencher_runner_"  # noqa: S105 - a prefix, not a secret
API_TOKEN_PREFIX = "benchrunner_api_"  # noqa: S105 - a prefix, not a secret
_HEX64 = re.compile(r"[0-9a-f]{64}")
RUNNER_TOKEN_LENGTH = len(RUNNER_TOKEN_PREFIX) + 64  # 79


def new_runner_token() -> str:
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
    """Prefix ``bencher_runner_``, 64 lowercase hex characters, 79 characters in all."""
    return _well_formed(token, RUNNER_TOKEN_PREFIX)


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
