"""Runners: the create and update bodies, the body that attaches a spec to a runner, and a
runner as the server answers it (docs/how-to/runner-host.md)."""

from __future__ import annotations

from pydantic import Field

from benchrunner.api.base import Answer, ApiBody
from benchrunner.api.specs import Spec
from benchrunner.core.tokens import RunnerKeyFormat

PUBLIC_KEY_HELP = (
    "Ed25519 public key, base64url of its 32 bytes: the runner must then sign every result "
    "(null on update: no longer)"
)


class NewRunner(ApiBody):
    name: str = Field(min_length=1, max_length=64)
    slug: str | None = Field(default=None, min_length=1, max_length=64)
    specs: list[str] = Field(default_factory=list, description="spec UUIDs or slugs to attach")
    public_key: str | None = Field(default=None, max_length=64, description=PUBLIC_KEY_HELP)
    key_format: RunnerKeyFormat = Field(
        default="hex",
        description="'hex': bencher_runner_ + 64 hex; 'bencher': bencher_runner_ + "
        "30 letters and digits, the form Bencher's runner binary requires",
    )


class RunnerPatch(ApiBody):
    name: str | None = Field(default=None, min_length=1, max_length=64)
    slug: str | None = Field(default=None, min_length=1, max_length=64)
    archived: bool | None = None
    paused: bool | None = None
    public_key: str | None = Field(default=None, max_length=64, description=PUBLIC_KEY_HELP)


class SpecRef(ApiBody):
    spec: str = Field(min_length=1, description="spec UUID or slug")


class Runner(Answer):
    """A runner with its specs. ``organization``: the one whose jobs alone it claims."""

    uuid: str
    name: str
    slug: str
    organization: str | None = None
    paused: bool = False
    os: str | None = None
    arch: str | None = None
    version: str | None = None
    public_key: str | None = None
    specs: list[Spec] = Field(default_factory=list)
    last_seen_at: str | None = None
    last_heartbeat_at: str | None = None
    """``last_seen_at``'s older name."""
    last_heartbeat: str | None = None
    """``last_seen_at``'s first name in this API."""
    created: str | None = None
    modified: str | None = None
    archived: str | None = None


class CreatedRunner(Runner):
    """A new runner with its ``token`` (and ``key``, the same in Bencher's form), shown this
    once."""

    token: str
    key: str | None = None
    """``token`` again, under Bencher's name, when it was asked for in Bencher's form."""


class RunnerToken(Answer):
    """A runner's new token: the old one stopped working. Bencher's endpoint names it
    ``key``; the client gives it as ``token`` too."""

    uuid: str
    token: str


class RunnerKey(Answer):
    """A runner's new key in Bencher's form, answered as Bencher does: the old one stopped
    working."""

    uuid: str
    key: str
