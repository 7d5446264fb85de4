"""The pull client against a small local registry that serves an OCI layout by digest.

The server's real ``/v2/`` registry lives in another branch; the end-to-end pull against it is
``tests/system/test_sandbox_jobs.py::test_an_image_pushed_with_skopeo_runs_in_the_sandbox``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from benchrunner.runner.oci.cache import ImageCache
from benchrunner.runner.oci.pull import PulledImage, PullError, Registry, pull_image
from tests.oci_layout import busybox_image, sha256_digest, write_layout
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
