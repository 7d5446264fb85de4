"""Build OCI images for tests without a network or a container engine.

``write_layout`` writes an OCI image layout directory (``oci-layout``, ``index.json``,
``blobs/sha256/...``) that skopeo, umoci and our own CLI read. ``busybox_layer`` makes a root
filesystem layer from Debian's ``busybox-static``, so a test image has a shell and coreutils.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import shutil
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import zstandard

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER_GZIP = "application/vnd.oci.image.layer.v1.tar+gzip"
OCI_LAYER_TAR = "application/vnd.oci.image.layer.v1.tar"
OCI_LAYER_ZSTD = "application/vnd.oci.image.layer.v1.tar+zstd"

BUSYBOX = Path("/usr/bin/busybox")
BUSYBOX_APPLETS = (
    *("sh", "cat", "echo", "ls", "sleep", "true", "false", "dd", "head", "grep"),
    *("nc", "id", "pwd", "env", "ln", "rm", "mkdir", "sha256sum", "seq", "test"),
)


def sha256_digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def descriptor(media_type: str, data: bytes, **extra: Any) -> dict[str, Any]:
    return {"mediaType": media_type, "digest": sha256_digest(data), "size": len(data), **extra}


def canonical(document: dict[str, Any]) -> bytes:
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()


@dataclass
class TarEntry:
    """One member of a layer tarball; ``kind`` is a tarfile type (REGTYPE, SYMTYPE, LNKTYPE...)."""

    name: str
    data: bytes = b""
    kind: bytes = tarfile.REGTYPE
    mode: int = 0o644
    link: str = ""


def tar_bytes(entries: list[TarEntry]) -> bytes:
    """An uncompressed tarball with exactly these members, hostile ones included."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for entry in entries:
            info = tarfile.TarInfo(entry.name)
            info.type = entry.kind
            info.mode = entry.mode
            info.mtime = 0
            info.linkname = entry.link
            payload = entry.data if entry.kind == tarfile.REGTYPE else b""
            info.size = len(payload)
            tar.addfile(info, io.BytesIO(payload) if payload else None)
    return buffer.getvalue()


def gzip_bytes(data: bytes) -> bytes:
    return gzip.compress(data, mtime=0)


def zstd_bytes(data: bytes) -> bytes:
    return zstandard.ZstdCompressor().compress(data)


def busybox_entries(extra: list[TarEntry] | None = None) -> list[TarEntry]:
    """A minimal root filesystem: static busybox, applet symlinks, /tmp and /etc/passwd."""
    entries = [
        TarEntry("bin/", kind=tarfile.DIRTYPE, mode=0o755),
        TarEntry("bin/busybox", BUSYBOX.read_bytes(), mode=0o755),
        *(
            TarEntry(f"bin/{name}", kind=tarfile.SYMTYPE, link="busybox")
            for name in BUSYBOX_APPLETS
        ),
        TarEntry("etc/", kind=tarfile.DIRTYPE, mode=0o755),
        TarEntry("etc/passwd", b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534::/:/bin/sh\n"),
        TarEntry("tmp/", kind=tarfile.DIRTYPE, mode=0o1777),
        TarEntry("root/", kind=tarfile.DIRTYPE, mode=0o700),
    ]
    return entries + (extra or [])


@dataclass
class Image:
    """One platform's image: layers (already compressed as ``layer_media_type`` says) + config."""

    layers: list[bytes]
    config: dict[str, Any] = field(default_factory=dict)
    architecture: str = "amd64"
    os: str = "linux"
    layer_media_type: str = OCI_LAYER_GZIP

    def config_bytes(self, diff_ids: list[str]) -> bytes:
        return canonical(
            {
                "architecture": self.architecture,
                "os": self.os,
                "config": self.config,
                "rootfs": {"type": "layers", "diff_ids": diff_ids},
            }
        )


@dataclass
class Layout:
    path: Path
    tag: str
    digest: str  # of the manifest or, for several platforms, of the index
    blobs: dict[str, bytes]


def busybox_image(config: dict[str, Any] | None = None, **image: Any) -> Image:
    layer = gzip_bytes(tar_bytes(busybox_entries()))
    return Image(layers=[layer], config=config or {"Cmd": ["/bin/sh"]}, **image)


def write_layout(path: Path, images: list[Image], tag: str = "latest") -> Layout:
    """Write ``images`` as an OCI layout; several images become one index, one per platform."""
    if path.exists():
        shutil.rmtree(path)
    blob_dir = path / "blobs" / "sha256"
    blob_dir.mkdir(parents=True)
    blobs: dict[str, bytes] = {}

    def put(data: bytes) -> str:
        digest = sha256_digest(data)
        (blob_dir / digest.removeprefix("sha256:")).write_bytes(data)
        blobs[digest] = data
        return digest

    manifests: list[tuple[bytes, Image]] = []
    for image in images:
        diff_ids = [
            sha256_digest(_uncompressed(layer, image.layer_media_type)) for layer in image.layers
        ]
        config = image.config_bytes(diff_ids)
        put(config)
        for layer in image.layers:
            put(layer)
        manifest = canonical(
            {
                "schemaVersion": 2,
                "mediaType": OCI_MANIFEST,
                "config": descriptor(OCI_CONFIG, config),
                "layers": [descriptor(image.layer_media_type, layer) for layer in image.layers],
            }
        )
        put(manifest)
        manifests.append((manifest, image))

    if len(manifests) == 1:
        top, top_type = manifests[0][0], OCI_MANIFEST
    else:
        top = canonical(
            {
                "schemaVersion": 2,
                "mediaType": OCI_INDEX,
                "manifests": [
                    descriptor(
                        OCI_MANIFEST,
                        manifest,
                        platform={"architecture": image.architecture, "os": image.os},
                    )
                    for manifest, image in manifests
                ],
            }
        )
        put(top)
        top_type = OCI_INDEX
    (path / "oci-layout").write_text('{"imageLayoutVersion":"1.0.0"}')
    index = {
        "schemaVersion": 2,
        "mediaType": OCI_INDEX,
        "manifests": [
            descriptor(top_type, top, annotations={"org.opencontainers.image.ref.name": tag})
        ],
    }
    (path / "index.json").write_text(json.dumps(index))
    return Layout(path, tag, sha256_digest(top), blobs)


def _uncompressed(layer: bytes, media_type: str) -> bytes:
    if media_type.endswith("+gzip"):
        return gzip.decompress(layer)
    if media_type.endswith("+zstd"):
        return zstandard.ZstdDecompressor().decompressobj().decompress(layer)
    return layer


def write_oci_archive(layout: Layout, path: Path) -> Path:
    """The layout as an OCI archive: the same files in one tarball."""
    with tarfile.open(path, "w") as tar:
        for member in sorted(layout.path.rglob("*")):
            if member.is_file():
                tar.add(member, arcname=member.relative_to(layout.path).as_posix())
    return path


def write_docker_save(path: Path, image: Image, repo_tag: str = "bench:latest") -> str:
    """A tarball in ``docker save``'s classic form (``manifest.json``, ``<id>.json``,
    ``<id>/layer.tar`` uncompressed); returns the sha256 of its config."""
    layers = [_uncompressed(layer, image.layer_media_type) for layer in image.layers]
    config = image.config_bytes([sha256_digest(layer) for layer in layers])
    config_id = sha256_digest(config).removeprefix("sha256:")
    files = {f"{config_id}.json": config}
    names = []
    for layer in layers:
        name = f"{sha256_digest(layer).removeprefix('sha256:')}/layer.tar"
        files[name] = layer
        names.append(name)
    manifest = [{"Config": f"{config_id}.json", "RepoTags": [repo_tag], "Layers": names}]
    files["manifest.json"] = json.dumps(manifest).encode()
    with tarfile.open(path, "w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return sha256_digest(config)
