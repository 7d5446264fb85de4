"""Signed results (docs/decisions/signed-results.md): Ed25519 keys in base64url, the signed object,
its verification.

A runner registered with a public key signs every terminal message:
``signature = base64url(Ed25519(canonical_json({"job": uuid, "nonce": nonce, "output_hash":
output_hash})))``, where ``output_hash`` is the hex SHA-256 of the canonical JSON of its results
and ``nonce`` the one its claimed job carried. base64url is written without padding; padding is
accepted on input.

Every refusal is a ``SignatureRefused`` whose message is one of the protocol's texts (or one in
their style), meant for the runner that sent the result.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from benchrunner.core.canonical import canonical_json

PUBLIC_KEY_BYTES = 32
SIGNATURE_BYTES = 64
_BASE64URL = re.compile(r"[A-Za-z0-9_-]*={0,2}")


class SignatureRefused(ValueError):
    """A signed result, or a key, that cannot be accepted; the message says why."""


def b64url_encode(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def b64url_decode(text: str) -> bytes:
    """Strict base64url, padding optional. Raises ValueError on any other character."""
    if not _BASE64URL.fullmatch(text):
        raise ValueError("not base64url")
    stripped = text.rstrip("=")
    try:
        return base64.urlsafe_b64decode(stripped + "=" * (-len(stripped) % 4))
    except (binascii.Error, ValueError):
        raise ValueError("not base64url") from None


def public_key(text: str) -> Ed25519PublicKey:
    """The Ed25519 public key written as base64url of its 32 raw bytes.

    Raises SignatureRefused: ``Invalid public key encoding`` / ``Invalid public key length``."""
    try:
        raw = b64url_decode(text)
    except ValueError:
        raise SignatureRefused("Invalid public key encoding") from None
    if len(raw) != PUBLIC_KEY_BYTES:
        raise SignatureRefused("Invalid public key length")
    return Ed25519PublicKey.from_public_bytes(raw)


def public_key_text(key: Ed25519PublicKey) -> str:
    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return b64url_encode(raw)


def key_fingerprint(text: str) -> str:
    """``SHA256:`` and the hex SHA-256 of the raw public key: names a key without showing it."""
    raw = b64url_decode(text)
    return "SHA256:" + hashlib.sha256(raw).hexdigest()


def signed_object(job: str, nonce: str, output_hash: str) -> bytes:
    """The exact bytes that are signed: the canonical JSON of these three fields, no others."""
    return canonical_json({"job": job, "nonce": nonce, "output_hash": output_hash})


def sign(private_key: Ed25519PrivateKey, job: str, nonce: str, output_hash: str) -> str:
    """The base64url signature (no padding) of ``signed_object(job, nonce, output_hash)``."""
    return b64url_encode(private_key.sign(signed_object(job, nonce, output_hash)))


def verify(key: Ed25519PublicKey, job: str, nonce: str, output_hash: str, signature: str) -> None:
    """Check ``signature`` over the signed object built from these values.

    Raises SignatureRefused: ``Invalid signature encoding``, ``Invalid signature length`` or
    ``Signature verification failed``."""
    try:
        raw = b64url_decode(signature)
    except ValueError:
        raise SignatureRefused("Invalid signature encoding") from None
    if len(raw) != SIGNATURE_BYTES:
        raise SignatureRefused("Invalid signature length")
    try:
        key.verify(raw, signed_object(job, nonce, output_hash))
    except InvalidSignature:
        raise SignatureRefused("Signature verification failed") from None


def private_key_pem(key: Ed25519PrivateKey) -> bytes:
    """PKCS#8 PEM, unencrypted (the file's mode protects it), as ``openssl genpkey`` writes."""
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def load_private_key(pem: bytes) -> Ed25519PrivateKey:
    """An Ed25519 private key from PKCS#8 PEM. Raises ValueError when it is not one."""
    try:
        key = serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError, binascii.Error) as exc:
        raise ValueError(f"not an unencrypted PEM private key ({exc})") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise ValueError("not an Ed25519 private key")
    return key
