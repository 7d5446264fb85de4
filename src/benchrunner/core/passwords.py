"""Passwords: Argon2id hashes (argon2-cffi's defaults, RFC 9106's second recommended profile),
the rules a new password must meet, and reading one from a file.

Hashing and verifying take tens of milliseconds of CPU on purpose; servers call them off the
event loop.
"""

from __future__ import annotations

import functools
from pathlib import Path

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

MIN_LENGTH = 8
MAX_LENGTH = 1024
"""Long enough for any passphrase; bounded so that a request cannot make us hash megabytes."""

_hasher = PasswordHasher()


@functools.cache
def _decoy_hash() -> str:
    """Verified when the email is unknown, so that a wrong email costs the time a wrong
    password does; made on first use, not at import, where every CLI call would pay for it."""
    return _hasher.hash("benchrunner decoy password")


class PasswordRejected(ValueError):
    """A new password breaks a rule; the message says which."""


def check_new(password: str) -> str:
    """``password`` if it may be set, else :class:`PasswordRejected`."""
    if len(password) < MIN_LENGTH:
        raise PasswordRejected(f"a password needs at least {MIN_LENGTH} characters")
    if len(password) > MAX_LENGTH:
        raise PasswordRejected(f"a password has at most {MAX_LENGTH} characters")
    if "\x00" in password:
        raise PasswordRejected("a password cannot contain a NUL character")
    return password


def hash_password(password: str) -> str:
    return _hasher.hash(check_new(password))


def verify(password_hash: str | None, password: str) -> bool:
    """True if ``password`` matches; a missing hash (no password set) never matches, after
    the same work as a real check."""
    if len(password) > MAX_LENGTH:
        return False
    try:
        matches = _hasher.verify(password_hash or _decoy_hash(), password)
        return matches and password_hash is not None
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False


def read_password_file(path: Path) -> str:
    """The password in ``path``: its first line, without the line break; rules checked."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return check_new(lines[0] if lines else "")
