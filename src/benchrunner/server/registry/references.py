"""Repository names, tags, digests and media types as the Distribution Spec defines them.

Every value a client sends that ends up in a database query, a file name or a response header
passes one of these checks first: a value outside the grammar is a 4xx in the spec's error
format, never a query PostgreSQL refuses (NUL) or a header the server cannot encode.
"""

from __future__ import annotations

import re

from benchrunner.server.registry.errors import RegistryError

# The spec's name grammar, one path component: project slugs and UUIDs both match it.
NAME = re.compile(r"[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*")
MAX_NAME = 255
# The spec's tag grammar; digests limited to sha256, the only algorithm the store verifies.
TAG = re.compile(r"[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}")
SHA256_DIGEST = re.compile(r"sha256:([a-f0-9]{64})")
ANY_DIGEST = re.compile(r"[a-z0-9]+(?:[+._-][a-z0-9]+)*:[a-zA-Z0-9=_-]+")
# RFC 6838's type/subtype, the form of mediaType and artifactType.
MEDIA_TYPE = re.compile(
    r"[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}"
)


def is_name(name: str) -> bool:
    return len(name) <= MAX_NAME and NAME.fullmatch(name) is not None


def check_name(name: str) -> str:
    """``name`` if it is a repository name by the spec's grammar; NAME_INVALID otherwise."""
    if not is_name(name):
        raise RegistryError("NAME_INVALID", f"invalid repository name {name!r}")
    return name


def is_digest(reference: str) -> bool:
    return ":" in reference


def is_any_digest(value: str) -> bool:
    return len(value) <= 1024 and ANY_DIGEST.fullmatch(value) is not None


def sha256_hex(digest: str) -> str:
    """The hex part of a ``sha256:`` digest; DIGEST_INVALID for any other form."""
    match = SHA256_DIGEST.fullmatch(digest)
    if match is None:
        if is_any_digest(digest):
            raise RegistryError("DIGEST_INVALID", f"unsupported digest algorithm in {digest!r}")
        raise RegistryError("DIGEST_INVALID", f"invalid digest {digest!r}")
    return match.group(1)


def is_tag(tag: str) -> bool:
    return TAG.fullmatch(tag) is not None


def check_tag(tag: str) -> str:
    if not is_tag(tag):
        raise RegistryError("MANIFEST_INVALID", f"invalid tag {tag!r}")
    return tag


def is_media_type(value: object) -> bool:
    return isinstance(value, str) and MEDIA_TYPE.fullmatch(value) is not None


def blob_key(digest: str) -> str:
    """Where a blob's bytes live in the blob store: shared by every project, by content."""
    return f"oci/blobs/sha256/{sha256_hex(digest)}"
