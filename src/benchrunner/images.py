"""Local OCI images the CLI pushes: an OCI image layout directory, an OCI archive (that layout as
a tarball), or a ``docker save`` tarball (Docker's ``manifest.json`` form).

An image is a tree of content-addressed nodes: an index names manifests, a manifest names its
config and layers. ``LocalImage.push_order`` lists every blob and manifest children first, so a
registry that checks references accepts each one. Layers are streamed from disk, never read
whole; a ``docker save`` tarball's members are hashed once, in a first streaming pass, because
its file names are not digests.

Errors: ``ImageError`` (a ``ValueError``) for anything that is not a readable image.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import tarfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_CONFIG = "application/vnd.docker.container.image.v1+json"
DOCKER_LAYER = "application/vnd.docker.image.rootfs.diff.tar"
DOCKER_LAYER_GZIP = "application/vnd.docker.image.rootfs.diff.tar.gzip"
INDEX_TYPES = frozenset({OCI_INDEX, DOCKER_LIST})
MANIFEST_TYPES = frozenset({OCI_MANIFEST, DOCKER_MANIFEST})
REF_NAME = "org.opencontainers.image.ref.name"
MAX_DOCUMENT_BYTES = 4 * 1024 * 1024
CHUNK = 1 << 20


class ImageError(ValueError):
    pass


Opener = Callable[[], contextlib.AbstractContextManager[IO[bytes]]]


@dataclass(frozen=True)
class Blob:
    digest: str
    size: int
    open: Opener


@dataclass(frozen=True)
class Manifest:
    digest: str
    media_type: str
    content: bytes


@dataclass
class LocalImage:
    """The image to push: ``top`` is what a tag points at (a manifest or an index)."""

    top: Manifest
    name: str | None  # the layout's ref name for it, if any
    blobs: list[Blob] = field(default_factory=list)
    manifests: list[Manifest] = field(default_factory=list)  # children of an index, in order


def _digest_hex(digest: str) -> str:
    algorithm, _, hex_part = digest.partition(":")
    if (
        algorithm != "sha256"
        or len(hex_part) != 64
        or not all(c in "0123456789abcdef" for c in hex_part)
    ):
        raise ImageError(f"unsupported digest {digest!r} (only sha256 is supported)")
    return hex_part


def _json(data: bytes, what: str) -> dict[str, Any]:
    try:
        document = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ImageError(f"{what} is not valid JSON: {exc}") from None
    if not isinstance(document, dict):
        raise ImageError(f"{what} must be a JSON object")
    return document


class _Files:
    """Named files of an image source: a directory or a tarball, read by relative path."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._tar: tarfile.TarFile | None = None
        self._members: dict[str, tarfile.TarInfo] = {}
        if path.is_file():
            try:
                # Open for as long as the image is being pushed: members are streamed from it.
                self._tar = tarfile.open(path, "r:*")  # noqa: SIM115
            except tarfile.TarError as exc:
                raise ImageError(f"{path} is neither a directory nor a tarball: {exc}") from None
            for member in self._tar.getmembers():
                if member.isfile():
                    self._members[member.name.removeprefix("./")] = member
        elif not path.is_dir():
            raise ImageError(f"{path} does not exist")

    def exists(self, name: str) -> bool:
        return name in self._members if self._tar else (self.path / name).is_file()

    def size(self, name: str) -> int:
        if self._tar:
            return self._members[name].size
        return (self.path / name).stat().st_size

    @contextlib.contextmanager
    def open(self, name: str) -> Iterator[IO[bytes]]:
        if self._tar is None:
            with (self.path / name).open("rb") as file:
                yield file
            return
        member = self._members.get(name)
        extracted = self._tar.extractfile(member) if member else None
        if extracted is None:
            raise ImageError(f"{self.path} has no file {name}")
        with extracted:
            yield extracted

    def read(self, name: str) -> bytes:
        if not self.exists(name):
            raise ImageError(f"{self.path} has no file {name}")
        if self.size(name) > MAX_DOCUMENT_BYTES:
            raise ImageError(f"{name} in {self.path} is too large for a manifest or config")
        with self.open(name) as handle:
            return handle.read()

    def sha256(self, name: str) -> str:
        hasher = hashlib.sha256()
        with self.open(name) as handle:
            while chunk := handle.read(CHUNK):
                hasher.update(chunk)
        return "sha256:" + hasher.hexdigest()


def load(path: Path, name: str | None = None) -> LocalImage:
    """The image at ``path``; ``name`` picks one of several tagged images in a layout."""
    files = _Files(path)
    if files.exists("index.json"):
        return _from_layout(files, name)
    if files.exists("manifest.json"):
        return _from_docker_save(files, name)
    raise ImageError(f"{path} is not an OCI layout, OCI archive or docker save tarball")


def _from_layout(files: _Files, name: str | None) -> LocalImage:
    index = _json(files.read("index.json"), "index.json")
    entries = index.get("manifests")
    if not isinstance(entries, list) or not entries:
        raise ImageError(f"{files.path}: index.json lists no images")
    named = [e for e in entries if (e.get("annotations") or {}).get(REF_NAME) == name]
    if name is not None and not named:
        raise ImageError(f"{files.path} has no image named {name!r}")
    if name is None and len(entries) > 1:
        names = sorted(str((e.get("annotations") or {}).get(REF_NAME)) for e in entries)
        raise ImageError(f"{files.path} holds several images; pick one: {', '.join(names)}")
    entry = (named or entries)[0]
    image = LocalImage(
        top=_manifest_node(files, entry), name=(entry.get("annotations") or {}).get(REF_NAME)
    )
    _walk(files, image, image.top, seen=set())
    return image


def _layout_name(digest: str) -> str:
    return f"blobs/sha256/{_digest_hex(digest)}"


def _manifest_node(files: _Files, descriptor: dict[str, Any]) -> Manifest:
    digest = str(descriptor.get("digest"))
    content = files.read(_layout_name(digest))
    if "sha256:" + hashlib.sha256(content).hexdigest() != digest:
        raise ImageError(f"{files.path}: {digest} does not match its content")
    media_type = descriptor.get("mediaType") or _json(content, digest).get("mediaType")
    if media_type not in INDEX_TYPES | MANIFEST_TYPES:
        raise ImageError(f"{files.path}: {digest} has unsupported media type {media_type}")
    return Manifest(digest, str(media_type), content)


def _walk(files: _Files, image: LocalImage, node: Manifest, seen: set[str]) -> None:
    document = _json(node.content, node.digest)
    if node.media_type in INDEX_TYPES:
        for child in document.get("manifests") or []:
            manifest = _manifest_node(files, child)
            _walk(files, image, manifest, seen)
            image.manifests.append(manifest)
        return
    for descriptor in [document.get("config") or {}, *(document.get("layers") or [])]:
        digest = str(descriptor.get("digest"))
        if digest in seen:
            continue
        seen.add(digest)
        blob_name = _layout_name(digest)
        if not files.exists(blob_name):
            raise ImageError(f"{files.path} lacks blob {digest}")
        image.blobs.append(Blob(digest, files.size(blob_name), _opener(files, blob_name)))


def _opener(files: _Files, name: str) -> Opener:
    return lambda: files.open(name)


def _from_docker_save(files: _Files, name: str | None) -> LocalImage:
    """Docker's own tarball: ``manifest.json`` names a config file and uncompressed layer tars."""
    entries = json.loads(files.read("manifest.json"))
    if not isinstance(entries, list) or not entries:
        raise ImageError(f"{files.path}: manifest.json lists no images")
    if name is not None:
        entries = [e for e in entries if name in (e.get("RepoTags") or [])]
        if not entries:
            raise ImageError(f"{files.path} has no image tagged {name!r}")
    entry = entries[0]
    config_name = str(entry.get("Config"))
    config = files.read(config_name)
    layers = []
    blobs = [
        Blob(
            "sha256:" + hashlib.sha256(config).hexdigest(), len(config), _opener(files, config_name)
        )
    ]
    for layer_name in entry.get("Layers") or []:
        digest = files.sha256(layer_name)
        with files.open(layer_name) as handle:
            gzipped = handle.read(2) == b"\x1f\x8b"
        size = files.size(layer_name)
        layers.append(
            {
                "mediaType": DOCKER_LAYER_GZIP if gzipped else DOCKER_LAYER,
                "size": size,
                "digest": digest,
            }
        )
        if all(b.digest != digest for b in blobs):
            blobs.append(Blob(digest, size, _opener(files, layer_name)))
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": DOCKER_MANIFEST,
            "config": {"mediaType": DOCKER_CONFIG, "size": len(config), "digest": blobs[0].digest},
            "layers": layers,
        },
        separators=(",", ":"),
    ).encode()
    top = Manifest("sha256:" + hashlib.sha256(manifest).hexdigest(), DOCKER_MANIFEST, manifest)
    tags = entry.get("RepoTags") or []
    tag = tags[0].rpartition(":")[2] if tags else None
    return LocalImage(top=top, name=tag, blobs=blobs)
