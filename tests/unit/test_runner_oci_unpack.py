"""Layer application: formats, whiteouts, and hostile layers that try to leave the root."""

from __future__ import annotations

import stat
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest

from benchrunner.runner.oci.unpack import UnpackError, apply_layer
from tests.oci_layout import TarEntry, gzip_bytes, tar_bytes, zstd_bytes

DIR, SYM, LNK = tarfile.DIRTYPE, tarfile.SYMTYPE, tarfile.LNKTYPE


@pytest.fixture
def rootfs(tmp_path: Path) -> Path:
    root = tmp_path / "rootfs"
    root.mkdir()
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory beside the root that no layer may touch."""
    path = tmp_path / "outside"
    path.mkdir()
    (path / "secret").write_text("host data")
    return path


def apply(
    rootfs: Path, entries: list[TarEntry], compress: Callable[[bytes], bytes] = lambda b: b
) -> None:
    layer = rootfs.parent / f"layer-{len(list(rootfs.parent.iterdir()))}"
    layer.write_bytes(compress(tar_bytes(entries)))
    apply_layer(rootfs, layer)


def tree(root: Path) -> set[str]:
    return {str(path.relative_to(root)) for path in root.rglob("*")}


@pytest.mark.parametrize(
    "compress", [lambda b: b, gzip_bytes, zstd_bytes], ids=["tar", "gzip", "zstd"]
)
def test_every_compression_unpacks_the_same_tree(
    rootfs: Path, compress: Callable[[bytes], bytes]
) -> None:
    apply(
        rootfs,
        [
            TarEntry("bin/", kind=DIR, mode=0o755),
            TarEntry("bin/tool", b"#!/bin/sh\n", mode=0o4755),
            TarEntry("bin/alias", kind=SYM, link="tool"),
            TarEntry("bin/copy", kind=LNK, link="bin/tool"),
            TarEntry("/etc/conf", b"x=1\n"),
        ],
        compress,
    )
    assert tree(rootfs) == {"bin", "bin/tool", "bin/alias", "bin/copy", "etc", "etc/conf"}
    assert (rootfs / "bin/tool").read_bytes() == b"#!/bin/sh\n"
    assert stat.S_IMODE((rootfs / "bin/tool").stat().st_mode) == 0o4755
    assert (rootfs / "bin/alias").readlink() == Path("tool")
    assert (rootfs / "bin/copy").stat().st_ino == (rootfs / "bin/tool").stat().st_ino


def test_whiteout_removes_a_file_and_a_directory_of_a_lower_layer(rootfs: Path) -> None:
    apply(rootfs, [TarEntry("a/keep", b"1"), TarEntry("a/gone", b"2"), TarEntry("b/c/d", b"3")])
    apply(rootfs, [TarEntry("a/.wh.gone"), TarEntry(".wh.b")])
    assert tree(rootfs) == {"a", "a/keep"}


def test_opaque_whiteout_hides_the_lower_layers_but_keeps_its_own_entries(rootfs: Path) -> None:
    apply(rootfs, [TarEntry("d/old", b"1"), TarEntry("d/sub/older", b"2"), TarEntry("e/x", b"3")])
    # The new entry comes before the marker in the tar: it must survive it.
    apply(rootfs, [TarEntry("d/new", b"4"), TarEntry("d/.wh..wh..opq")])
    assert tree(rootfs) == {"d", "d/new", "e", "e/x"}


def test_a_later_entry_replaces_an_earlier_one_of_another_kind(rootfs: Path) -> None:
    apply(rootfs, [TarEntry("p/q", b"file"), TarEntry("link", kind=SYM, link="p")])
    apply(rootfs, [TarEntry("p", b"now a file"), TarEntry("link/", kind=DIR, mode=0o755)])
    assert (rootfs / "p").read_bytes() == b"now a file"
    assert (rootfs / "link").is_dir() and not (rootfs / "link").is_symlink()


def test_a_symlink_inside_the_root_is_followed_within_it(rootfs: Path) -> None:
    apply(
        rootfs,
        [
            TarEntry("usr/bin/", kind=DIR, mode=0o755),
            TarEntry("bin", kind=SYM, link="usr/bin"),
            TarEntry("lib", kind=SYM, link="/usr/lib"),
            TarEntry("bin/tool", b"t"),
            TarEntry("lib/libc", b"c"),
        ],
    )
    assert (rootfs / "usr/bin/tool").read_bytes() == b"t"
    assert (rootfs / "usr/lib/libc").read_bytes() == b"c"


@pytest.mark.parametrize(
    ("entries", "reason"),
    [
        ([TarEntry("../escape", b"x")], "'..'"),
        ([TarEntry("a/../../escape", b"x")], "'..'"),
        ([TarEntry("/../escape", b"x")], "'..'"),
        (
            [TarEntry("up", kind=SYM, link="../outside"), TarEntry("up/secret", b"owned")],
            "leaves the root",
        ),
        (
            [
                TarEntry("deep/", kind=DIR),
                TarEntry("deep/up", kind=SYM, link="../../outside"),
                TarEntry("deep/up/new", b"owned"),
            ],
            "leaves the root",
        ),
        (
            [
                TarEntry("a", kind=SYM, link="b"),
                TarEntry("b", kind=SYM, link="a"),
                TarEntry("a/x", b"loop"),
            ],
            "too many symlinks",
        ),
        ([TarEntry("pw", kind=LNK, link="../outside/secret")], "'..'"),
        ([TarEntry("pw", kind=LNK, link="etc/missing")], "does not exist"),
        (
            [
                TarEntry("up", kind=SYM, link="../outside"),
                TarEntry("pw", kind=LNK, link="up/secret"),
            ],
            "leaves the root",
        ),
        ([TarEntry("dir/", kind=DIR), TarEntry("pw", kind=LNK, link="dir")], "is not a file"),
        ([TarEntry("dev/sda", kind=tarfile.BLKTYPE)], "device nodes"),
        ([TarEntry("dev/mem", kind=tarfile.CHRTYPE)], "device nodes"),
        ([TarEntry("f", b"x"), TarEntry("f/under", b"y")], "not a directory"),
    ],
    ids=[
        "dotdot",
        "dotdot-inside",
        "absolute-dotdot",
        "symlink-out-as-parent",
        "relative-symlink-out-as-parent",
        "symlink-loop",
        "hardlink-dotdot",
        "hardlink-missing",
        "hardlink-through-symlink-out",
        "hardlink-to-directory",
        "block-device",
        "char-device",
        "file-as-parent",
    ],
)
def test_a_hostile_layer_is_refused_and_nothing_outside_changes(
    rootfs: Path, outside: Path, entries: list[TarEntry], reason: str
) -> None:
    with pytest.raises(UnpackError, match=reason):
        apply(rootfs, entries)
    assert tree(outside) == {"secret"}
    assert (outside / "secret").read_text() == "host data"
    assert not (rootfs.parent / "escape").exists()


def test_a_symlink_entry_pointing_out_is_created_but_never_written_through(
    rootfs: Path, outside: Path
) -> None:
    # Harmless as long as the unpacker never follows it; inside the container it resolves
    # against the container's own root.
    apply(
        rootfs,
        [
            TarEntry("etc/", kind=DIR),
            TarEntry("etc/secret", kind=SYM, link=str(outside / "secret")),
        ],
    )
    apply(rootfs, [TarEntry("etc/secret", b"replaced")])
    assert (outside / "secret").read_text() == "host data"
    assert (rootfs / "etc/secret").read_bytes() == b"replaced"


def test_an_absolute_symlink_as_parent_resolves_inside_the_root(
    rootfs: Path, outside: Path
) -> None:
    apply(rootfs, [TarEntry("host", kind=SYM, link=str(outside)), TarEntry("host/secret", b"mine")])
    assert (outside / "secret").read_text() == "host data"
    assert (rootfs / outside.relative_to("/") / "secret").read_bytes() == b"mine"


def test_a_fifo_is_created(rootfs: Path) -> None:
    apply(rootfs, [TarEntry("run/pipe", kind=tarfile.FIFOTYPE, mode=0o600)])
    assert stat.S_ISFIFO((rootfs / "run/pipe").lstat().st_mode)


def test_a_corrupt_layer_is_a_clear_error(rootfs: Path) -> None:
    layer = rootfs.parent / "bad"
    layer.write_bytes(gzip_bytes(b"not a tar archive at all" * 40)[:50])
    with pytest.raises(UnpackError, match="not a valid tar archive"):
        apply_layer(rootfs, layer)
