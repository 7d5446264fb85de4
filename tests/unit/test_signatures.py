"""Canonical JSON, output hashes and Ed25519 signatures as docs/decisions/signed-results.md has
them."""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from benchrunner.core.canonical import canonical_json
from benchrunner.core.signatures import (
    SignatureRefused,
    b64url_decode,
    b64url_encode,
    key_fingerprint,
    load_private_key,
    private_key_pem,
    public_key,
    public_key_text,
    sign,
    signed_object,
    verify,
)
from benchrunner.protocol import (
    Canceled,
    Completed,
    Failed,
    IterationResult,
    encode,
    parse_runner_message,
    received_output_hash,
    result_output_hash,
)

# RFC 8032, section 7.1, TEST 1: the primitive itself, so our key handling is checked against
# numbers that were not produced by this code.
RFC_SECRET = bytes.fromhex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
RFC_PUBLIC = bytes.fromhex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
RFC_SIGNATURE_OF_EMPTY = bytes.fromhex(
    "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065"
    "224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
)
JOB = "0b9c3e4a-8f7d-4c1e-9a2b-5d6e7f8a9b0c"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"b": 1, "a": 2}, b'{"a":2,"b":1}'),
        ({"z": {"y": 1, "x": [3, {"d": 0, "c": None}]}}, b'{"z":{"x":[3,{"c":null,"d":0}],"y":1}}'),
        ({"text": "café ✓"}, '{"text":"café ✓"}'.encode()),
        (["a b", 1, True], b'["a b",1,true]'),
        (
            {"output_hash": "hash-1", "nonce": "nonce-submit-1", "assignment_id": 15},
            b'{"assignment_id":15,"nonce":"nonce-submit-1","output_hash":"hash-1"}',
        ),
    ],
)
def test_canonical_json_sorts_keys_without_spaces_in_utf8(value: Any, expected: bytes) -> None:
    assert canonical_json(value) == expected


def test_the_signed_object_is_exactly_job_nonce_and_output_hash() -> None:
    assert signed_object(JOB, "n-1", "ab" * 32) == (
        f'{{"job":"{JOB}","nonce":"n-1","output_hash":"{"ab" * 32}"}}'.encode()
    )


def test_the_rfc_8032_vector_verifies_through_our_key_encoding() -> None:
    key = public_key(b64url_encode(RFC_PUBLIC))
    key.verify(RFC_SIGNATURE_OF_EMPTY, b"")
    private = Ed25519PrivateKey.from_private_bytes(RFC_SECRET)
    assert public_key_text(private.public_key()) == b64url_encode(RFC_PUBLIC)


def test_a_signature_is_the_ed25519_signature_of_the_canonical_object() -> None:
    private = Ed25519PrivateKey.from_private_bytes(RFC_SECRET)
    signature = sign(private, JOB, "n-1", "cd" * 32)
    expected = private.sign(f'{{"job":"{JOB}","nonce":"n-1","output_hash":"{"cd" * 32}"}}'.encode())
    assert b64url_decode(signature) == expected
    assert "=" not in signature and "+" not in signature and "/" not in signature
    key = public_key(b64url_encode(RFC_PUBLIC))
    verify(key, JOB, "n-1", "cd" * 32, signature)
    verify(key, JOB, "n-1", "cd" * 32, signature + "=" * (-len(signature) % 4))  # padded


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"signature": "not base64!"}, "Invalid signature encoding"),
        ({"signature": b64url_encode(b"\x00" * 63)}, "Invalid signature length"),
        ({"signature": b64url_encode(b"\x00" * 64)}, "Signature verification failed"),
        ({"nonce": "n-2"}, "Signature verification failed"),
        ({"output_hash": "ef" * 32}, "Signature verification failed"),
        ({"job": str(uuid.uuid4())}, "Signature verification failed"),
    ],
)
def test_a_changed_field_or_a_bad_signature_is_refused_with_seed_002s_reason(
    change: dict[str, str], reason: str
) -> None:
    private = Ed25519PrivateKey.from_private_bytes(RFC_SECRET)
    fields = {"job": JOB, "nonce": "n-1", "output_hash": "cd" * 32}
    fields["signature"] = sign(private, fields["job"], fields["nonce"], fields["output_hash"])
    fields.update(change)
    with pytest.raises(SignatureRefused, match=f"^{reason}$"):
        verify(public_key(b64url_encode(RFC_PUBLIC)), **fields)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("a+b/", "Invalid public key encoding"),
        ("%%%", "Invalid public key encoding"),
        (b64url_encode(b"\x01" * 31), "Invalid public key length"),
        (b64url_encode(b"\x01" * 33), "Invalid public key length"),
        ("", "Invalid public key length"),
    ],
)
def test_a_malformed_public_key_is_refused(text: str, reason: str) -> None:
    with pytest.raises(SignatureRefused, match=f"^{reason}$"):
        public_key(text)


def test_the_fingerprint_names_the_raw_key() -> None:
    text = b64url_encode(RFC_PUBLIC)
    assert key_fingerprint(text) == "SHA256:" + hashlib.sha256(RFC_PUBLIC).hexdigest()


def test_a_private_key_survives_its_pem_file() -> None:
    private = Ed25519PrivateKey.generate()
    loaded = load_private_key(private_key_pem(private))
    assert public_key_text(loaded.public_key()) == public_key_text(private.public_key())
    with pytest.raises(ValueError, match="not an unencrypted PEM private key"):
        load_private_key(b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")


def test_the_output_hash_is_the_sha256_of_the_results_as_sent() -> None:
    message = Completed(
        event="completed",
        job=uuid.UUID(JOB),
        results=[IterationResult(exit_code=0, stdout="é ✓"), IterationResult(exit_code=1)],
    )
    wire = '[{"exit_code":0,"stdout":"é ✓"},{"exit_code":1}]'.encode()
    assert result_output_hash(message) == hashlib.sha256(wire).hexdigest()
    # Parsed back from the wire, the hash is the same.
    parsed = parse_runner_message(encode(message))
    assert isinstance(parsed, Completed)
    assert result_output_hash(parsed) == result_output_hash(message)
    assert received_output_hash(message) == result_output_hash(message)


def test_the_received_hash_covers_every_field_as_sent_even_unknown_ones() -> None:
    sent = '[{"exit_code":0,"output":null,"stdout":"x","vm":{"boot_ms":12.5}}]'
    text = f'{{"event":"completed","job":"{JOB}","results":{sent},"output_hash":"h"}}'
    parsed = parse_runner_message(text)
    assert isinstance(parsed, Completed)
    assert parsed.results == [IterationResult(exit_code=0, stdout="x")]  # "vm" is dropped ...
    # ... but the hash is of what was received, so an honest signer's hash matches.
    assert received_output_hash(parsed) == hashlib.sha256(sent.encode()).hexdigest()
    assert received_output_hash(parsed) != result_output_hash(parsed)
    # A message that names no output hash is not hashed as received.
    unsigned = parse_runner_message(text.replace(',"output_hash":"h"', ""))
    assert isinstance(unsigned, Completed)
    assert received_output_hash(unsigned) == result_output_hash(unsigned)


def test_a_canceled_or_resultless_failure_hashes_the_empty_list() -> None:
    empty = hashlib.sha256(b"[]").hexdigest()
    assert result_output_hash(Canceled(job=uuid.UUID(JOB))) == empty
    assert result_output_hash(Failed(event="failed", job=uuid.UUID(JOB), error="x")) == empty


def test_signature_fields_are_optional_and_round_trip() -> None:
    plain = parse_runner_message(f'{{"event":"canceled","job":"{JOB}"}}')
    assert isinstance(plain, Canceled) and plain.signature is None
    signed = Canceled(job=uuid.UUID(JOB), nonce="n", output_hash="h", signature="s")
    assert parse_runner_message(encode(signed)) == signed
