"""Repository names, tags and digests as the Distribution Spec defines them."""

from __future__ import annotations

import re

from benchrunner.server.registry.errors import RegistryError

# The spec's tag grammar; digests limited to sha256, the only algorithm the store verifies.
TAG = re.compile(r"[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}")
SHA256_DIGEST = re.compile(r"sha256:([a-f0-9]{64})")
ANY_DIGEST = re.compile(r"[a-z0-9]+(?:[+._-][a-z0-9]+)*:[a-zA-Z0-9=_-]+")


def is_digest(reference: str) -> bool:
    return ":" in reference


def sha256_hex(digest: str) -> str:
    """The hex part of a ``sha256:`` digest; DIGEST_INVALID for any other form."""
    match = SHA256_DIGEST.fullmatch(digest)
    if match is None:
        if ANY_DIGEST.fullmatch(digest):
            raise RegistryError("DIGEST_INVALID", f"unsupported digest algorithm in {digest!r}")
        raise RegistryError("DIGEST_INVALID", f"invalid digest {digest!r}")
    return match.group(1)


def check_tag(tag: str) -> str:
    if TAG.fullmatch(tag) is None:
        raise RegistryError("MANIFEST_INVALID", f"invalid tag {tag!r}")
    return tag


def blob_key(digest: str) -> str:
    """Where a blob's bytes live in the blob store: shared by every project, by content."""
    return f"oci/blobs/sha256/{sha256_hex(digest)}"
