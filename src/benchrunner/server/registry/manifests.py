"""Manifest media types and what a pushed manifest refers to.

Image manifests (OCI and Docker schema 2) refer to blobs (config and layers); indexes (OCI index
and Docker manifest list) refer to other manifests. Either may name a ``subject``, which is what
the referrers API lists it under.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from benchrunner.server.registry.errors import RegistryError
from benchrunner.server.registry.references import is_any_digest, is_media_type

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
IMAGE_TYPES = frozenset({OCI_MANIFEST, DOCKER_MANIFEST})
INDEX_TYPES = frozenset({OCI_INDEX, DOCKER_LIST})
MAX_MANIFEST_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class ParsedManifest:
    media_type: str
    blobs: list[str]  # digests this manifest needs in the repository as blobs
    manifests: list[str]  # ... and as manifests
    subject: str | None
    artifact_type: str | None
    annotations: dict[str, str] | None


def _descriptor_digest(value: Any, where: str) -> str:
    if not isinstance(value, dict) or not isinstance(value.get("digest"), str):
        raise RegistryError("MANIFEST_INVALID", f"{where} must be a descriptor with a digest")
    digest: str = value["digest"]
    if not is_any_digest(digest):
        raise RegistryError("MANIFEST_INVALID", f"{where} has an invalid digest {digest!r}")
    size = value.get("size")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise RegistryError("MANIFEST_INVALID", f"{where} must have a non-negative size")
    return digest


def _media_type(value: Any, where: str) -> str | None:
    """An optional media type field; MANIFEST_INVALID unless absent or a media type."""
    if value is None:
        return None
    if not is_media_type(value):
        raise RegistryError("MANIFEST_INVALID", f"{where} must be a media type")
    media_type: str = value
    return media_type


def parse(content: bytes, content_type: str | None) -> ParsedManifest:
    """Validate a pushed manifest; MANIFEST_INVALID says what is wrong with it."""
    try:
        document = json.loads(content)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RegistryError("MANIFEST_INVALID", f"manifest is not JSON: {exc}") from None
    if not isinstance(document, dict):
        raise RegistryError("MANIFEST_INVALID", "manifest must be a JSON object")
    if document.get("schemaVersion") != 2:
        raise RegistryError("MANIFEST_INVALID", "only schemaVersion 2 manifests are accepted")
    declared = _media_type(document.get("mediaType"), "mediaType")
    header = (content_type or "").split(";")[0].strip() or None
    media_type = declared or header
    if declared and header and declared != header:
        raise RegistryError(
            "MANIFEST_INVALID", f"Content-Type {header} differs from the mediaType {declared}"
        )
    if media_type is None:
        media_type = OCI_INDEX if "manifests" in document else OCI_MANIFEST
    if media_type not in IMAGE_TYPES | INDEX_TYPES:
        raise RegistryError("MANIFEST_INVALID", f"unsupported manifest media type {media_type}")

    subject = None
    if "subject" in document:
        subject = _descriptor_digest(document["subject"], "subject")
    annotations = document.get("annotations")
    if annotations is not None and (
        not isinstance(annotations, dict)
        or not all(isinstance(v, str) for v in annotations.values())
    ):
        raise RegistryError("MANIFEST_INVALID", "annotations must map strings to strings")
    artifact_type = _media_type(document.get("artifactType"), "artifactType")

    if media_type in IMAGE_TYPES:
        config = document.get("config")
        config_digest = _descriptor_digest(config, "config")
        assert isinstance(config, dict)
        layers = document.get("layers")
        if not isinstance(layers, list):
            raise RegistryError("MANIFEST_INVALID", "an image manifest needs a layers list")
        layer_digests = [
            _descriptor_digest(layer, f"layers[{i}]") for i, layer in enumerate(layers)
        ]
        if artifact_type is None:
            artifact_type = _media_type(config.get("mediaType"), "config.mediaType")
        return ParsedManifest(
            media_type, [config_digest, *layer_digests], [], subject, artifact_type, annotations
        )

    children = document.get("manifests")
    if not isinstance(children, list):
        raise RegistryError("MANIFEST_INVALID", "an index needs a manifests list")
    child_digests = [_descriptor_digest(m, f"manifests[{i}]") for i, m in enumerate(children)]
    return ParsedManifest(media_type, [], child_digests, subject, artifact_type, annotations)


def referrer_descriptor(
    digest: str, media_type: str, size: int, artifact_type: str | None, annotations: str | None
) -> dict[str, Any]:
    descriptor: dict[str, Any] = {"mediaType": media_type, "digest": digest, "size": size}
    if artifact_type is not None:
        descriptor["artifactType"] = artifact_type
    if annotations:
        descriptor["annotations"] = json.loads(annotations)
    return descriptor
