"""A server's users and their API tokens: the create bodies, and each as the server answers
it (docs/how-to/users.md)."""

from __future__ import annotations

from pydantic import Field

from benchrunner.api.base import Answer, ApiBody
from benchrunner.core import passwords

EMAIL_PATTERN = r"^[^@\s]+@[^@\s]+$"
MAX_TTL = 2**32 - 1
"""Bencher's bound on a token's time to live (seconds, an unsigned 32-bit integer)."""


class NewUser(ApiBody):
    name: str = Field(min_length=1, max_length=64)
    email: str = Field(min_length=3, max_length=320, pattern=EMAIL_PATTERN)
    password: str | None = Field(
        default=None,
        min_length=passwords.MIN_LENGTH,
        max_length=passwords.MAX_LENGTH,
        description="the console password (argon2-hashed; never shown again)",
        json_schema_extra={"writeOnly": True},
    )
    admin: bool = False


class NewToken(ApiBody):
    name: str = Field(min_length=1, max_length=64)
    ttl: int | None = Field(
        default=None, ge=1, le=MAX_TTL, description="seconds until it expires; none: never"
    )


class User(Answer):
    """A user, never its password."""

    uuid: str
    name: str
    slug: str
    email: str
    admin: bool = False


class Token(Answer):
    """An API token, without the token itself."""

    uuid: str
    user: str
    name: str
    created: str | None = None
    expiration: str | None = None
    revoked: str | None = None


class CreatedToken(Token):
    """A new API token with the token itself, shown this once."""

    token: str
