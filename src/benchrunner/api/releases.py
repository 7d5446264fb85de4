"""Runner releases as the server answers them (docs/decisions/runner-releases.md)."""

from __future__ import annotations

from benchrunner.api.base import Answer


class Release(Answer):
    """A published runner wheel; ``checksum`` its SHA-256 (hex)."""

    uuid: str
    channel: str
    version: str
    checksum: str
    filename: str
    size: int
    created: str
