"""Idempotent submission (docs/decisions/submission.md): what an ``Idempotency-Key`` means.

A key is the ``Idempotency-Key`` header or Bencher's body field ``idempotency_key`` (one of
them, or both with one value). It belongs to its owner: the signed-in user, or for an anonymous
run the source address. Within the window (5 minutes) a repeat with the same canonical payload
gets the first submission's report; the same key with another payload is a 409. The canonical
payload is the validated body as JSON with sorted keys and every default filled in, less the
key itself, so the header or the field, field order and spelled-out defaults do not matter.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from benchrunner.core.canonical import canonical_hash
from benchrunner.server.http.errors import ApiError, bad_request
from benchrunner.server.store.accounts import UserRow
from benchrunner.server.store.idempotency import HeldKey, KeyRef

HEADER = "Idempotency-Key"
MAX_KEY_LENGTH = 255


def key_ref(
    header: str | None, body_key: str | None, user: UserRow | None, source_ip: str
) -> KeyRef | None:
    """The submission's key and owner, or None without a key. 400 for a key that is empty,
    too long or not printable, or for a header and body field that disagree."""
    if header is not None and body_key is not None and header != body_key:
        raise bad_request(
            f"the {HEADER} header and the body's idempotency_key differ: give one, or the "
            "same value in both"
        )
    key = header if header is not None else body_key
    if key is None:
        return None
    if not 1 <= len(key) <= MAX_KEY_LENGTH or not key.isprintable():
        raise bad_request(
            f"{HEADER} must be 1-{MAX_KEY_LENGTH} printable characters (a UUID, for example)"
        )
    owner = f"user:{user.id}" if user is not None else f"ip:{source_ip}"
    return KeyRef(owner, key)


def payload_hash(validated_body: Mapping[str, Any]) -> str:
    """Hash of the canonical payload: ``validated_body`` is the body model dumped in JSON mode
    with every field, less ``idempotency_key``."""
    return canonical_hash(dict(validated_body))


def replayed_report(held: HeldKey, ref: KeyRef, payload: str, window: dt.timedelta) -> int:
    """The report of the submission that holds ``ref``, to answer a repeat with. 409 when
    that submission's payload was another."""
    if held.payload_hash != payload:
        minutes = window.total_seconds() / 60
        raise ApiError(
            409,
            f"{HEADER} {ref.key!r} was already used within the last {minutes:g} minutes with a "
            "different request body; use a new key for a different submission",
            error_code="idempotency_key_reused_with_different_payload",
        )
    # The holder binds its report before it commits, and a claim sees only committed holders.
    assert held.report_id is not None
    return held.report_id
