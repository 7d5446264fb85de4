"""Pull an image by digest from an OCI Distribution registry into the image cache.

    manifest (or index -> the manifest of this spec's architecture) -> config -> layers

Every document and blob is fetched by digest and checked against it before use (the cache
refuses a mismatch), and nothing already cached is downloaded again: manifests are cached like
blobs, so a second job with the same image sends no request at all.
Authentication is the job's short-lived Bearer token; nothing else is ever sent.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from benchrunner.runner.oci.cache import CacheError, ImageCache, check_digest

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_MANIFEST_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
MANIFEST_TYPES = (OCI_MANIFEST, OCI_INDEX, DOCKER_MANIFEST, DOCKER_MANIFEST_LIST)
INDEX_TYPES = (OCI_INDEX, DOCKER_MANIFEST_LIST)

# The spec's architecture names (uname) -> the OCI platform's (Go) names.
OCI_ARCHITECTURES = {"x86_64": "amd64", "aarch64": "arm64"}

MAX_DOCUMENT_BYTES = 4 * 1024 * 1024
_CHUNK = 1 << 20


class PullError(Exception):
    """The image cannot be pulled or is not usable; ``str()`` is the job's error."""


@dataclass(frozen=True)
class ImageConfig:
    """What the image config says about running it (all optional in an image)."""

    entrypoint: list[str] = field(default_factory=list)
    cmd: list[str] = field(default_factory=list)
    env: list[str] = field(default_factory=list)
    working_dir: str = ""
    user: str = ""

    @classmethod
    def parse(cls, document: dict[str, Any]) -> ImageConfig:
        config = document.get("config") or {}
        if not isinstance(config, dict):
            raise PullError("image config: 'config' is not an object")
        return cls(
            entrypoint=_strings(config, "Entrypoint"),
            cmd=_strings(config, "Cmd"),
            env=_strings(config, "Env"),
            working_dir=_string(config, "WorkingDir"),
            user=_string(config, "User"),
        )


@dataclass(frozen=True)
class PulledImage:
    manifest_digest: str  # of the platform manifest, never of an index
    config: ImageConfig
    layers: list[Path]  # cached layer blobs, lowest first


class Registry:
    """The registry at ``base_url`` (``/v2/`` is appended), with ``token`` as Bearer. The HTTP
    client is made on the first request: a pull served from the cache makes none. Once
    ``interrupted`` is set, the next request or chunk raises PullError."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        interrupted: threading.Event | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._base_url = base_url.rstrip("/") + "/v2/"
        self._token = token
        self._interrupted = interrupted or threading.Event()
        self._transport = transport
        self._http: httpx.Client | None = None

    def close(self) -> None:
        if self._http is not None:
            self._http.close()

    def manifest(self, repository: str, digest: str) -> bytes:
        """The manifest's bytes; PullError past MAX_DOCUMENT_BYTES (read no further)."""
        path = f"{repository}/manifests/{digest}"
        headers = {"Accept": ", ".join(MANIFEST_TYPES)}
        with self._client().stream("GET", path, headers=headers) as response:
            _check(response, path)
            body = bytearray()
            for chunk in response.iter_bytes(_CHUNK):
                self._check_interrupted()
                body += chunk
                if len(body) > MAX_DOCUMENT_BYTES:
                    raise PullError(f"manifest {digest} is larger than {MAX_DOCUMENT_BYTES} bytes")
        return bytes(body)

    def blob_chunks(self, repository: str, digest: str) -> Iterator[bytes]:
        with self._client().stream("GET", f"{repository}/blobs/{digest}") as response:
            _check(response, f"blob {digest}")
            for chunk in response.iter_bytes(_CHUNK):
                self._check_interrupted()
                yield chunk

    def _check_interrupted(self) -> None:
        if self._interrupted.is_set():
            raise PullError("pull interrupted")

    def _client(self) -> httpx.Client:
        self._check_interrupted()
        if self._http is None:
            self._http = httpx.Client(
                base_url=self._base_url,
                headers={"Authorization": f"Bearer {self._token}"},
                timeout=httpx.Timeout(30.0, connect=10.0),
                follow_redirects=True,  # httpx drops Authorization on a redirect to another host
                transport=self._transport,
            )
        return self._http


def pull_image(
    registry: Registry,
    cache: ImageCache,
    *,
    repository: str,
    digest: str,
    architecture: str,
) -> PulledImage:
    """Fetch image ``digest`` of ``repository`` for the spec's ``architecture`` (``x86_64``,
    ``aarch64``) into ``cache``. Raises PullError with the reason (network, auth, digest
    mismatch, no matching platform, malformed documents)."""
    try:
        manifest_digest, manifest = _platform_manifest(
            registry, cache, repository, digest, architecture
        )
        config_descriptor = _descriptor(manifest.get("config"), "config")
        config_path = _blob(registry, cache, repository, config_descriptor["digest"])
        config = ImageConfig.parse(_json(config_path.read_bytes(), "image config"))
        layers_field = manifest.get("layers")
        if not isinstance(layers_field, list):
            raise PullError(f"manifest {manifest_digest} has no layer list")
        layers = [
            _blob(registry, cache, repository, _descriptor(layer, "layer")["digest"])
            for layer in layers_field
        ]
    except CacheError as exc:
        raise PullError(str(exc)) from None
    except httpx.HTTPError as exc:
        raise PullError(f"cannot reach the registry: {exc}") from None
    return PulledImage(manifest_digest=manifest_digest, config=config, layers=layers)


def _platform_manifest(
    registry: Registry, cache: ImageCache, repository: str, digest: str, architecture: str
) -> tuple[str, dict[str, Any]]:
    document = _document(registry, cache, repository, digest)
    if _media_type(document) not in INDEX_TYPES:
        return digest, document
    wanted = OCI_ARCHITECTURES.get(architecture, architecture)
    entries = document.get("manifests")
    if not isinstance(entries, list):
        raise PullError(f"index {digest} has no manifest list")
    for entry in entries:
        descriptor = _descriptor(entry, "index entry")
        platform = entry.get("platform") or {}
        if platform.get("os", "linux") == "linux" and platform.get("architecture") == wanted:
            chosen = descriptor["digest"]
            manifest = _document(registry, cache, repository, chosen)
            if _media_type(manifest) in INDEX_TYPES:
                raise PullError(f"index {digest}: nested indexes are not supported")
            return chosen, manifest
    raise PullError(f"image {digest} has no linux/{wanted} manifest for this spec")


def _document(
    registry: Registry, cache: ImageCache, repository: str, digest: str
) -> dict[str, Any]:
    check_digest(digest)
    path = cache.blob(digest)
    if path is None:
        path = cache.store_blob(digest, [registry.manifest(repository, digest)])
    return _json(path.read_bytes(), f"manifest {digest}")


def _blob(registry: Registry, cache: ImageCache, repository: str, digest: str) -> Path:
    return cache.blob(digest) or cache.store_blob(digest, registry.blob_chunks(repository, digest))


def _check(response: httpx.Response, what: str) -> None:
    if response.status_code == 200:
        return
    response.read()
    reason = {
        401: "the job's registry token was refused (expired or not for this project)",
        403: "the job's registry token does not allow pulling this image",
        404: "not found in the registry",
    }.get(response.status_code, f"registry answered HTTP {response.status_code}")
    raise PullError(f"{what}: {reason}")


def _json(data: bytes, what: str) -> dict[str, Any]:
    try:
        document = json.loads(data)
    except ValueError:
        raise PullError(f"{what} is not valid JSON") from None
    if not isinstance(document, dict):
        raise PullError(f"{what} is not a JSON object")
    return document


def _media_type(document: dict[str, Any]) -> str:
    media_type = document.get("mediaType")
    if isinstance(media_type, str):
        return media_type
    # mediaType is optional in an OCI index; its "manifests" list tells it from a manifest.
    return OCI_INDEX if "manifests" in document else OCI_MANIFEST


def _descriptor(value: object, what: str) -> dict[str, Any]:
    if not isinstance(value, dict) or not isinstance(value.get("digest"), str):
        raise PullError(f"malformed {what} descriptor")
    check_digest(value["digest"])
    return value


def _strings(config: dict[str, Any], key: str) -> list[str]:
    value = config.get(key) or []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise PullError(f"image config: {key} is not a list of strings")
    return value


def _string(config: dict[str, Any], key: str) -> str:
    value = config.get(key) or ""
    if not isinstance(value, str):
        raise PullError(f"image config: {key} is not a string")
    return value
