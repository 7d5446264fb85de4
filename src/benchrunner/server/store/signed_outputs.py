"""A keyed runner's signature over a job's stored output (docs/decisions/signed-results.md), kept on
the job row.

Written in the transaction that stores the output it signs (with ``completed``, ``failed``, or a
late result after a failure), so the two never disagree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Connection

from benchrunner.server.store.tables import job


@dataclass(frozen=True)
class SignedOutput:
    output_hash: str
    """Hex SHA-256 of the canonical JSON of the results."""
    signature: str
    """base64url Ed25519 signature of ``{"job", "nonce", "output_hash"}``, verified."""
    key_fingerprint: str
    """``SHA256:<hex>`` of the runner's public key that verified it."""

    @classmethod
    def from_row(cls, row: Any) -> SignedOutput | None:
        if row.output_signature is None:
            return None
        return cls(row.output_hash, row.output_signature, row.output_key_fingerprint)


def signed_columns(signed: SignedOutput | None) -> dict[str, str | None]:
    """The job row's columns for ``signed``; None clears an earlier one (an unsigned result
    replaced it). A transition writes them in its own update."""
    if signed is None:
        return dict.fromkeys(("output_hash", "output_signature", "output_key_fingerprint"))
    return {
        "output_hash": signed.output_hash,
        "output_signature": signed.signature,
        "output_key_fingerprint": signed.key_fingerprint,
    }


def signed_output_put(conn: Connection, job_id: int, signed: SignedOutput | None) -> None:
    """Keep ``signed`` with the output of a job whose status does not change."""
    conn.execute(job.update().where(job.c.id == job_id).values(**signed_columns(signed)))
