"""What CLI and server agree on about a branch's versions: a report's git hash and the start
point's default depth, as Bencher's."""

from __future__ import annotations

import re

DEFAULT_MAX_VERSIONS = 255
"""Bencher's default for ``start_point.max_versions`` (``--start-point-max-versions``)."""

_GIT_HASH = re.compile(r"[0-9a-fA-F]{40}|[0-9a-fA-F]{64}")


def is_git_hash(value: str) -> bool:
    """A full git object name: 40 (SHA-1) or 64 (SHA-256) hexadecimal digits."""
    return _GIT_HASH.fullmatch(value) is not None
