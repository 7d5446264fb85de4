"""The image cache: digests checked on entry, root filesystems unpacked once per manifest."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchrunner.runner.oci.cache import CacheError, ImageCache
from tests.oci_layout import TarEntry, busybox_entries, gzip_bytes, sha256_digest, tar_bytes


def store(cache: ImageCache, entries: list[TarEntry]) -> Path:
    layer = gzip_bytes(tar_bytes(entries))
    return cache.store_blob(sha256_digest(layer), [layer[:10], layer[10:]])


def test_a_rootfs_is_unpacked_once_per_manifest(tmp_path: Path) -> None:
    cache = ImageCache(tmp_path)
    layers = [store(cache, busybox_entries()), store(cache, [TarEntry("bin/.wh.grep")])]
    manifest = sha256_digest(b"manifest")
    rootfs = cache.rootfs(manifest, layers)
    assert (rootfs / "bin/busybox").is_file()
    assert not (rootfs / "bin/grep").is_symlink()
    (rootfs / "marker").write_text("same directory")
    assert cache.rootfs(manifest, layers) == rootfs
    assert (rootfs / "marker").exists()
    assert ImageCache(tmp_path).rootfs(manifest, []) == rootfs  # survives a restart


def test_a_hostile_layer_leaves_no_rootfs_behind(tmp_path: Path) -> None:
    cache = ImageCache(tmp_path)
    layers = [store(cache, [TarEntry("../evil", b"x")])]
    with pytest.raises(CacheError, match=r"'\.\.'"):
        cache.rootfs(sha256_digest(b"manifest"), layers)
    assert list((tmp_path / "rootfs" / "sha256").iterdir()) == []
    assert list((tmp_path / "tmp").iterdir()) == []
    assert not (tmp_path.parent / "evil").exists()


def test_a_blob_with_the_wrong_content_is_not_stored(tmp_path: Path) -> None:
    cache = ImageCache(tmp_path)
    digest = sha256_digest(b"expected")
    with pytest.raises(CacheError, match="wrong content"):
        cache.store_blob(digest, [b"something else"])
    assert cache.blob(digest) is None
