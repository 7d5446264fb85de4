"""deploy/images/archive_key.py and build.sh's Debian layer key: a cached Debian layer is made
anew when the archive updates a package, and only then; without the archive, the newest cached
layer is reused with a warning."""

from __future__ import annotations

import contextlib
import functools
import os
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.harness import REPO
from tests.http_serving import serving

SCRIPT = REPO / "deploy" / "images" / "archive_key.py"
BUILD = REPO / "deploy" / "images" / "build.sh"
ARCH = "amd64"
SOURCE_DATE_EPOCH = "1764288000"


def release(packages_sha: str, *, date: str = "Sat, 28 Nov 2026 10:00:00 UTC") -> str:
    """A clearsigned release file as Debian's archive writes one (its fields trimmed)."""
    return (
        "-----BEGIN PGP SIGNED MESSAGE-----\n"
        "Hash: SHA256\n\n"
        "Origin: Debian\n"
        "Codename: bookworm\n"
        f"Date: {date}\n"
        f"Valid-Until: {date}\n"
        "Architectures: amd64 arm64\n"
        "MD5Sum:\n"
        " 0123456789abcdef0123456789abcdef  100 main/binary-amd64/Packages\n"
        "SHA256:\n"
        f" {packages_sha}  2560365 main/binary-amd64/Packages\n"
        f" {packages_sha[::-1]}   383424 main/binary-amd64/Packages.xz\n"
        f" {'b' * 64}  2460365 main/binary-arm64/Packages\n"
        f" {'c' * 64}     1234 main/i18n/Translation-en\n"
        "-----BEGIN PGP SIGNATURE-----\n\n"
        f"{date.encode().hex()}\n"
        "-----END PGP SIGNATURE-----\n"
    )


def publish(root: Path, suite: str, text: str, name: str = "InRelease") -> None:
    folder = root / "debian" / "dists" / suite
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.iterdir():
        old.unlink()
    (folder / name).write_text(text)


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@contextlib.contextmanager
def mirror(root: Path) -> Iterator[str]:
    """A Debian mirror serving ``root`` on loopback; its ``debian`` URL."""
    handler = functools.partial(QuietHandler, directory=str(root))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    with serving(server, "debian-mirror"):
        yield f"http://127.0.0.1:{server.server_address[1]}/debian"


def key(*sources: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), ARCH, *sources],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_key_follows_the_architecture_s_package_index_alone(tmp_path: Path) -> None:
    publish(tmp_path, "bookworm", release("a" * 64))
    with mirror(tmp_path) as url:
        source = f"deb {url} bookworm main"
        first = key(source)
        assert first.returncode == 0, first.stderr
        assert len(first.stdout.strip()) == 16
        # Signed again, its dates new: the same packages, the same key.
        publish(tmp_path, "bookworm", release("a" * 64, date="Sun, 29 Nov 2026 10:00:00 UTC"))
        assert key(source).stdout == first.stdout
        # A package updated: the index's checksum changes, and so does the key.
        publish(tmp_path, "bookworm", release("d" * 64))
        updated = key(source)
        assert updated.returncode == 0, updated.stderr
        assert updated.stdout != first.stdout


def test_a_mirror_without_in_release_is_read_from_release(tmp_path: Path) -> None:
    publish(tmp_path, "bookworm", release("a" * 64))
    with mirror(tmp_path) as url:
        signed = key(f"deb {url} bookworm main").stdout
        publish(tmp_path, "bookworm", release("a" * 64), name="Release")
        unsigned = key(f"deb {url} bookworm main")
        assert unsigned.returncode == 0, unsigned.stderr
        assert unsigned.stdout == signed


def test_every_source_counts(tmp_path: Path) -> None:
    publish(tmp_path, "bookworm", release("a" * 64))
    publish(tmp_path, "bookworm-updates", release("e" * 64))
    with mirror(tmp_path) as url:
        sources = (f"deb {url} bookworm main", f"deb {url} bookworm-updates main")
        before = key(*sources).stdout
        publish(tmp_path, "bookworm-updates", release("f" * 64))
        after = key(*sources)
        assert after.returncode == 0, after.stderr
        assert after.stdout != before


def test_an_unreachable_archive_is_named(tmp_path: Path) -> None:
    with mirror(tmp_path) as url:
        pass  # stopped: nothing listens there any more
    done = key(f"deb {url} bookworm main")
    assert done.returncode == 1
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith("archive_key.py: cannot read the archive's state: ")
    assert f"{url}/dists/bookworm/InRelease" in line


def test_a_release_without_the_architecture_s_index_is_an_error(tmp_path: Path) -> None:
    publish(tmp_path, "bookworm", release("a" * 64).replace("binary-amd64", "binary-s390x"))
    with mirror(tmp_path) as url:
        done = key(f"deb {url} bookworm main")
    assert done.returncode == 1
    assert "lists no package index for amd64" in done.stderr


def build_env(url: str, cache_home: Path) -> dict[str, str]:
    return {
        **os.environ,
        "DEBIAN_MIRROR": url,
        "DEBIAN_SECURITY": "none",
        "SOURCE_DATE_EPOCH": SOURCE_DATE_EPOCH,
        "XDG_CACHE_HOME": str(cache_home),
    }


def debian_key(url: str, cache_home: Path) -> str:
    done = subprocess.run(
        [str(BUILD), "server", "--debian-key"],
        capture_output=True,
        text=True,
        timeout=60,
        env=build_env(url, cache_home),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_build_sh_keys_its_debian_layer_on_the_archive(tmp_path: Path) -> None:
    machine = subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True)
    if machine.stdout.strip() != ARCH:
        pytest.fail("these release files are written for amd64 machines")
    publish(tmp_path, "bookworm", release("a" * 64))
    publish(tmp_path, "bookworm-updates", release("e" * 64))
    with mirror(tmp_path) as url:
        first = debian_key(url, tmp_path / "cache")
        recipe, _, archive = first.partition("-")
        assert len(recipe) == len(archive) == 16
        publish(tmp_path, "bookworm-updates", release("f" * 64))
        updated = debian_key(url, tmp_path / "cache")
    assert updated.partition("-")[0] == recipe  # made the same way
    assert updated != first  # from other packages


def test_without_the_archive_the_newest_cached_layer_is_reused(tmp_path: Path) -> None:
    """build.sh offline: the newest Debian layer made the same way is taken, with a warning
    naming it. (The build then fails here, on purpose: the layer is an empty tar and the wheel
    is not one.)"""
    publish(tmp_path, "bookworm", release("a" * 64))
    publish(tmp_path, "bookworm-updates", release("e" * 64))
    cache_home = tmp_path / "cache"
    stages = cache_home / "benchrunner-images"
    stages.mkdir(parents=True)
    with mirror(tmp_path) as url:
        recipe = debian_key(url, cache_home).partition("-")[0]
    for name, mtime in (
        ("older", 1_700_000_000),
        ("newest", 1_800_000_000),
        ("old", 1_600_000_000),
    ):
        layer = stages / f"debian-server-{recipe}-{name}.tar"
        with tarfile.open(layer, "w"):
            pass
        os.utime(layer, (mtime, mtime))
    wheel = tmp_path / "benchrunner-0.1.0-py3-none-any.whl"
    wheel.write_bytes(b"not a wheel")
    done = subprocess.run(
        [str(BUILD), "server", "--out", str(tmp_path / "out"), "--wheel", str(wheel)],
        capture_output=True,
        text=True,
        timeout=120,
        env=build_env(url, cache_home),  # the mirror stopped: nothing answers there now
        check=False,
    )
    assert done.returncode != 0
    assert "archive_key.py: cannot read the archive's state" in done.stderr
    assert (
        f"build.sh: WARNING: reusing the cached debian-server-{recipe}-newest.tar" in done.stderr
    ), done.stderr
    assert "layer 1, Debian" not in done.stderr  # not made anew
