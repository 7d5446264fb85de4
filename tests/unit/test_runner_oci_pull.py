"""The pull client against a small local registry that serves an OCI layout by digest.

The server's real ``/v2/`` registry lives in another branch; the end-to-end pull against it is
``tests/system/test_sandbox_jobs.py::test_an_image_pushed_with_skopeo_runs_in_the_sandbox``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchrunner.runner.oci.cache import ImageCache
from benchrunner.runner.oci.pull import (
    DOCKER_MANIFEST,
    DOCKER_MANIFEST_LIST,
    MAX_DOCUMENT_BYTES,
    PulledImage,
    PullError,
    Registry,
    pull_image,
)
from tests.oci_layout import (
    BUSYBOX,
    OCI_LAYER_ZSTD,
    Image,
    busybox_entries,
    busybox_image,
    canonical,
    descriptor,
    sha256_digest,
    tar_bytes,
    write_layout,
    zstd_bytes,
)
from tests.oci_registry import REPOSITORY, TOKEN, LocalRegistry, local_registry


@pytest.fixture
def registry() -> Iterator[LocalRegistry]:
    with local_registry() as running:
        yield running


def pull(
    registry: LocalRegistry, cache: ImageCache, digest: str, token: str = TOKEN
) -> PulledImage:
    client = Registry(registry.url, token)
    try:
        return pull_image(
            client, cache, repository=REPOSITORY, digest=digest, architecture="x86_64"
        )
    finally:
        client.close()


def test_a_second_pull_of_the_same_image_downloads_nothing(
    registry: LocalRegistry, tmp_path: Path
) -> None:
    layout = write_layout(
        tmp_path / "layout", [busybox_image({"Cmd": ["/bin/true"], "Env": ["A=1"]})]
    )
    registry.serve(layout)
    cache = ImageCache(tmp_path / "cache")
    first = pull(registry, cache, layout.digest)
    assert len(registry.requests) == 3  # manifest, config, one layer
    second = pull(registry, cache, layout.digest)
    assert len(registry.requests) == 3
    assert first == second
    assert first.config.cmd == ["/bin/true"]
    assert first.config.env == ["A=1"]


def test_the_platform_of_the_spec_is_chosen_from_an_index(
    registry: LocalRegistry, tmp_path: Path
) -> None:
    amd = busybox_image({"Cmd": ["amd64"]})
    arm = busybox_image({"Cmd": ["arm64"]}, architecture="arm64")
    layout = write_layout(tmp_path / "layout", [arm, amd])
    registry.serve(layout)
    pulled = pull(registry, ImageCache(tmp_path / "cache"), layout.digest)
    assert pulled.config.cmd == ["amd64"]
    assert pulled.manifest_digest != layout.digest


def test_an_index_without_the_spec_platform_is_refused(
    registry: LocalRegistry, tmp_path: Path
) -> None:
    arm = busybox_image(architecture="arm64")
    ppc = busybox_image(architecture="ppc64le")
    layout = write_layout(tmp_path / "layout", [arm, ppc])
    registry.serve(layout)
    with pytest.raises(PullError, match="no linux/amd64 manifest"):
        pull(registry, ImageCache(tmp_path / "cache"), layout.digest)


def test_a_tampered_layer_is_refused_and_not_cached(
    registry: LocalRegistry, tmp_path: Path
) -> None:
    layout = write_layout(tmp_path / "layout", [busybox_image()])
    registry.serve(layout)
    layer = max(layout.blobs, key=lambda digest: len(layout.blobs[digest]))
    registry.tamper[layer] = layout.blobs[layer][:-1] + bytes([layout.blobs[layer][-1] ^ 1])
    cache = ImageCache(tmp_path / "cache")
    with pytest.raises(PullError, match="wrong content"):
        pull(registry, cache, layout.digest)
    assert cache.blob(layer) is None
    assert list((cache.root / "tmp").iterdir()) == []


def test_a_tampered_manifest_is_refused(registry: LocalRegistry, tmp_path: Path) -> None:
    layout = write_layout(tmp_path / "layout", [busybox_image()])
    registry.serve(layout)
    registry.tamper[layout.digest] = b'{"schemaVersion":2,"layers":[]}'
    with pytest.raises(PullError, match="wrong content"):
        pull(registry, ImageCache(tmp_path / "cache"), layout.digest)


@pytest.mark.parametrize(
    ("digest", "token", "reason"),
    [
        (sha256_digest(b"absent"), TOKEN, "not found"),
        (None, "someone-else", "token was refused"),
        ("sha512:abcd", TOKEN, "unsupported or malformed digest"),
        ("sha256:../../etc", TOKEN, "unsupported or malformed digest"),
    ],
    ids=["unknown", "bad-token", "other-algorithm", "path-in-digest"],
)
def test_pull_errors_are_clear(
    registry: LocalRegistry, tmp_path: Path, digest: str | None, token: str, reason: str
) -> None:
    layout = write_layout(tmp_path / "layout", [busybox_image()])
    registry.serve(layout)
    with pytest.raises(PullError, match=reason):
        pull(registry, ImageCache(tmp_path / "cache"), digest or layout.digest, token)


def test_an_unreachable_registry_is_a_pull_error(tmp_path: Path) -> None:
    client = Registry("http://127.0.0.1:9", TOKEN)
    with pytest.raises(PullError, match="cannot reach the registry"):
        pull_image(
            client,
            ImageCache(tmp_path / "cache"),
            repository=REPOSITORY,
            digest=sha256_digest(b"x"),
            architecture="x86_64",
        )
    client.close()


def test_a_zstd_image_is_pulled_and_unpacked(registry: LocalRegistry, tmp_path: Path) -> None:
    image = Image(
        layers=[zstd_bytes(tar_bytes(busybox_entries()))],
        config={"Cmd": ["/bin/sh"]},
        layer_media_type=OCI_LAYER_ZSTD,
    )
    layout = write_layout(tmp_path / "layout", [image])
    registry.serve(layout)
    cache = ImageCache(tmp_path / "cache")
    pulled = pull(registry, cache, layout.digest)
    rootfs = cache.rootfs(pulled.manifest_digest, pulled.layers)
    assert (rootfs / "bin" / "busybox").stat().st_size == BUSYBOX.stat().st_size


def test_docker_media_types_are_understood(registry: LocalRegistry, tmp_path: Path) -> None:
    layout = write_layout(tmp_path / "layout", [busybox_image({"Cmd": ["docker"]})])
    manifest = json.loads(layout.blobs[layout.digest])
    manifest["mediaType"] = DOCKER_MANIFEST
    manifest["config"]["mediaType"] = "application/vnd.docker.container.image.v1+json"
    for layer in manifest["layers"]:
        layer["mediaType"] = "application/vnd.docker.image.rootfs.diff.tar.gzip"
    manifest_bytes = canonical(manifest)
    listing = canonical(
        {
            "schemaVersion": 2,
            "mediaType": DOCKER_MANIFEST_LIST,
            "manifests": [
                descriptor(
                    DOCKER_MANIFEST,
                    manifest_bytes,
                    platform={"architecture": "amd64", "os": "linux"},
                )
            ],
        }
    )
    registry.serve(layout)
    registry.blobs.update(
        {sha256_digest(manifest_bytes): manifest_bytes, sha256_digest(listing): listing}
    )
    pulled = pull(registry, ImageCache(tmp_path / "cache"), sha256_digest(listing))
    assert pulled.manifest_digest == sha256_digest(manifest_bytes)
    assert pulled.config.cmd == ["docker"]


def test_an_oversized_manifest_is_refused_without_reading_it_all(
    registry: LocalRegistry, tmp_path: Path
) -> None:
    layout = write_layout(tmp_path / "layout", [busybox_image()])
    registry.serve(layout)
    registry.tamper[layout.digest] = b" " * (MAX_DOCUMENT_BYTES + 2 * 1024 * 1024)
    with pytest.raises(PullError, match="larger than"):
        pull(registry, ImageCache(tmp_path / "cache"), layout.digest)
