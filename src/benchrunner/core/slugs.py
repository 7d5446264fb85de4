"""Slugs and names as on the wire (docs/decisions/bencher-wire.md)."""

from __future__ import annotations

import re
import secrets

_NON_ALNUM = re.compile(r"[^a-z0-9]+")
MAX_SLUG = 64


def slugify(name: str) -> str:
    """Lowercase ASCII, non-alphanumerics collapsed to ``-``, at most 64 characters."""
    slug = _NON_ALNUM.sub("-", name.lower()).strip("-")[:MAX_SLUG].strip("-")
    return slug or "x"


def with_suffix(slug: str, suffix: str | None = None) -> str:
    """A taken slug gets ``-`` and a short suffix (random unless given), cut to stay a slug."""
    suffix = suffix or secrets.token_hex(4)
    return f"{slug[: MAX_SLUG - len(suffix) - 1].rstrip('-')}-{suffix}"


def is_slug(value: str) -> bool:
    return 0 < len(value) <= MAX_SLUG and slugify(value) == value
