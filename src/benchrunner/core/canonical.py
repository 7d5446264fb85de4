"""Canonical JSON: one byte string per value, whatever the order its objects' keys came in, so
that two equal payloads hash alike (a resent result, a repeated submission)."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_json(value: Any) -> bytes:
    """``value`` (JSON types only) as UTF-8 JSON with sorted keys and no whitespace."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def canonical_hash(value: Any) -> str:
    """Hex SHA-256 of ``canonical_json(value)``."""
    return hashlib.sha256(canonical_json(value)).hexdigest()
