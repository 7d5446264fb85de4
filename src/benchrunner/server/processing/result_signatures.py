"""Checking a terminal message from a runner registered with a public key
(docs/decisions/signed-results.md): it must carry the claimed job's nonce, the hash of the results
it carries, and a valid signature over both. Runners without a key are not asked to sign; what they
send in these fields is ignored."""

from __future__ import annotations

from benchrunner.core.signatures import SignatureRefused, key_fingerprint, public_key, verify
from benchrunner.protocol import Canceled, Completed, Failed, received_output_hash
from benchrunner.server.store.jobs import JobRow
from benchrunner.server.store.runners import RunnerRow
from benchrunner.server.store.signed_outputs import SignedOutput

SIGNED_FIELDS = ("nonce", "output_hash", "signature")


def check_signed_result(
    runner: RunnerRow, job: JobRow, message: Completed | Failed | Canceled
) -> SignedOutput | None:
    """The verified signature to keep with the result, or None when ``runner`` has no key.

    Raises SignatureRefused, in this order: a field missing; the runner's stored key unusable;
    the signature malformed or not valid for the ``job``, ``nonce`` and ``output_hash`` sent
    (so only the key's holder learns more); ``Invalid nonce`` when the nonce is not the
    claimed job's; the output hash not that of the results as received (every field of
    them, known to this server or not)."""
    if runner.public_key is None:
        return None
    missing = [name for name in SIGNED_FIELDS if getattr(message, name) is None]
    if missing:
        raise SignatureRefused(
            f"Missing {', '.join(missing)}: this runner is registered with a public key, so "
            "every result must be signed"
        )
    assert message.nonce is not None and message.output_hash is not None
    assert message.signature is not None
    key = public_key(runner.public_key)
    verify(key, str(job.uuid), message.nonce, message.output_hash, message.signature)
    if message.nonce != job.nonce:
        raise SignatureRefused("Invalid nonce: it is not the nonce of the job's claim")
    if message.output_hash != received_output_hash(message):
        raise SignatureRefused(
            "Output hash mismatch: output_hash is not sha256_hex(canonical_json(results)) "
            "of the results as received"
        )
    return SignedOutput(message.output_hash, message.signature, key_fingerprint(runner.public_key))
