"""deploy/images/archive_key.py and build.sh's Debian layer key: a cached Debian layer is made
anew when the archive updates a package, and only then; without the archive, the newest cached
layer is reused with a warning."""

from __future__ import annotations

import contextlib
import functools
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.harness import REPO
from tests.http_serving import serving

SCRIPT = REPO / "deploy" / "images" / "archive_key.py"
BUILD = REPO / "deploy" / "images" / "build.sh"
ARCH = subprocess.run(
    ["dpkg", "--print-architecture"], capture_output=True, text=True, check=True
).stdout.strip()
SOURCE_DATE_EPOCH = "1764288000"


def release(
    packages_sha: str,
    *,
    date: str = "Sat, 28 Nov 2026 10:00:00 UTC",
    others: str = "b",
) -> str:
    """A clearsigned release file as Debian's archive writes one (its fields trimmed): the
    machine's package index in two compressions and its update index, another architecture's
    index and a translation (``others``: what those hold)."""
    return (
        "-----BEGIN PGP SIGNED MESSAGE-----\n"
        "Hash: SHA256\n\n"
        "Origin: Debian\n"
        "Codename: bookworm\n"
        f"Date: {date}\n"
        f"Valid-Until: {date}\n"
        "MD5Sum:\n"
        f" 0123456789abcdef0123456789abcdef  100 main/binary-{ARCH}/Packages\n"
        "SHA256:\n"
        f" {packages_sha}  2560365 main/binary-{ARCH}/Packages\n"
        f" {packages_sha[::-1]}   383424 main/binary-{ARCH}/Packages.xz\n"
        f" {others * 64}    12345 main/binary-{ARCH}/Packages.diff/Index\n"
        f" {others * 64}  2460365 main/binary-other/Packages\n"
        f" {others * 64}     1234 main/i18n/Translation-en\n"
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


class MirrorHandler(SimpleHTTPRequestHandler):
    """Serves the mirror's files; answers 503 to everything while ``down`` is set."""

    def __init__(self, *args: Any, down: threading.Event, **kwargs: Any) -> None:
        self.down = down
        super().__init__(*args, **kwargs)

    def send_head(self) -> Any:
        if self.down.is_set():
            self.send_error(503, "mirror down")
            return None
        return super().send_head()

    def log_message(self, format: str, *args: object) -> None:
        pass


@dataclass
class Mirror:
    url: str
    """Its ``debian`` URL."""
    down: threading.Event
    """Set: it answers every request with 503, as a mirror out of reach."""


@contextlib.contextmanager
def mirror(root: Path) -> Iterator[Mirror]:
    """A Debian mirror serving ``root`` on loopback."""
    down = threading.Event()
    handler = functools.partial(MirrorHandler, directory=str(root), down=down)
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    with serving(server, "debian-mirror"):
        yield Mirror(f"http://127.0.0.1:{server.server_address[1]}/debian", down)


LOCAL = {"no_proxy": "127.0.0.1", "NO_PROXY": "127.0.0.1"}
"""The test mirrors are on loopback: never through a proxy the environment names."""


def key(*sources: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), ARCH, *sources],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **LOCAL},
        check=False,
    )


@contextlib.contextmanager
def refusing() -> Iterator[str]:
    """A mirror URL on a loopback port held by a socket that does not listen: every connection
    is refused, and no other test's server can take the port meanwhile."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{held.getsockname()[1]}/debian"


def test_the_key_follows_the_architecture_s_package_index_alone(tmp_path: Path) -> None:
    publish(tmp_path, "bookworm", release("a" * 64))
    with mirror(tmp_path) as served:
        url = served.url
        source = f"deb {url} bookworm main"
        first = key(source)
        assert first.returncode == 0, first.stderr
        assert len(first.stdout.strip()) == 16
        # Signed again, its dates new: the same packages, the same key.
        publish(tmp_path, "bookworm", release("a" * 64, date="Sun, 29 Nov 2026 10:00:00 UTC"))
        assert key(source).stdout == first.stdout
        # Another architecture, a translation, the index's own updates: not what it holds.
        publish(tmp_path, "bookworm", release("a" * 64, others="9"))
        assert key(source).stdout == first.stdout
        # A package updated: the index's checksum changes, and so does the key.
        publish(tmp_path, "bookworm", release("d" * 64))
        updated = key(source)
        assert updated.returncode == 0, updated.stderr
        assert updated.stdout != first.stdout


def test_a_mirror_without_in_release_is_read_from_release(tmp_path: Path) -> None:
    publish(tmp_path, "bookworm", release("a" * 64))
    with mirror(tmp_path) as served:
        url = served.url
        signed = key(f"deb {url} bookworm main").stdout
        publish(tmp_path, "bookworm", release("a" * 64), name="Release")
        unsigned = key(f"deb {url} bookworm main")
        assert unsigned.returncode == 0, unsigned.stderr
        assert unsigned.stdout == signed


def test_every_source_counts(tmp_path: Path) -> None:
    publish(tmp_path, "bookworm", release("a" * 64))
    publish(tmp_path, "bookworm-updates", release("e" * 64))
    with mirror(tmp_path) as served:
        url = served.url
        sources = (f"deb {url} bookworm main", f"deb {url} bookworm-updates main")
        before = key(*sources).stdout
        publish(tmp_path, "bookworm-updates", release("f" * 64))
        after = key(*sources)
        assert after.returncode == 0, after.stderr
        assert after.stdout != before


def test_an_unreachable_archive_is_named() -> None:
    with refusing() as url:
        done = key(f"deb {url} bookworm main")
    assert done.returncode == 1
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith("archive_key.py: cannot read the archive's state: ")
    assert f"{url}/dists/bookworm/InRelease" in line


def test_a_mirror_with_neither_release_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "debian" / "dists" / "bookworm").mkdir(parents=True)
    with mirror(tmp_path) as served:
        url = served.url
        done = key(f"deb {url} bookworm main")
    assert done.returncode == 1
    assert f"{url}/dists/bookworm: neither InRelease nor Release is there" in done.stderr


def test_a_local_mirror_is_read_through_a_file_url(tmp_path: Path) -> None:
    """A ``file:`` source, as apt reads a mirror on disk: the same key as served, and its
    ``Release`` read where it has no ``InRelease``."""
    publish(tmp_path, "bookworm", release("a" * 64))
    local = f"deb file://{tmp_path}/debian bookworm main"
    with mirror(tmp_path) as served:
        assert key(local).stdout == key(f"deb {served.url} bookworm main").stdout
    publish(tmp_path, "bookworm", release("a" * 64), name="Release")
    unsigned = key(local)
    assert unsigned.returncode == 0, unsigned.stderr
    (tmp_path / "debian" / "dists" / "bookworm" / "Release").unlink()
    assert "neither InRelease nor Release is there" in key(local).stderr


def test_a_release_without_the_architecture_s_index_is_an_error(tmp_path: Path) -> None:
    publish(tmp_path, "bookworm", release("a" * 64).replace(f"binary-{ARCH}/", "binary-other/"))
    with mirror(tmp_path) as served:
        url = served.url
        done = key(f"deb {url} bookworm main")
    assert done.returncode == 1
    assert f"lists no package index for {ARCH}" in done.stderr


def build_env(url: str, cache_home: Path) -> dict[str, str]:
    return {
        **os.environ,
        "DEBIAN_MIRROR": url,
        "DEBIAN_SECURITY": "none",
        "SOURCE_DATE_EPOCH": SOURCE_DATE_EPOCH,
        "XDG_CACHE_HOME": str(cache_home),
        **LOCAL,
    }


def debian_key_run(url: str, cache_home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BUILD), "server", "--debian-key"],
        capture_output=True,
        text=True,
        timeout=60,
        env=build_env(url, cache_home),
        check=False,
    )


def debian_key(url: str, cache_home: Path) -> str:
    done = debian_key_run(url, cache_home)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_build_sh_keys_its_debian_layer_on_the_archive(tmp_path: Path) -> None:
    publish(tmp_path, "bookworm", release("a" * 64))
    publish(tmp_path, "bookworm-updates", release("e" * 64))
    with mirror(tmp_path) as served:
        url = served.url
        first = debian_key(url, tmp_path / "cache")
        recipe, _, archive = first.partition("-")
        assert len(recipe) == len(archive) == 16
        publish(tmp_path, "bookworm-updates", release("f" * 64))
        updated = debian_key(url, tmp_path / "cache")
    assert updated.partition("-")[0] == recipe  # made the same way
    assert updated != first  # from other packages


def test_without_the_archive_the_newest_cached_layer_is_reused(tmp_path: Path) -> None:
    """build.sh offline: the newest Debian layer made the same way is taken, with a warning
    naming it; with none cached, the build stops saying so."""
    publish(tmp_path, "bookworm", release("a" * 64))
    publish(tmp_path, "bookworm-updates", release("e" * 64))
    cache_home = tmp_path / "cache"
    stages = cache_home / "benchrunner-images"
    with mirror(tmp_path) as served:
        recipe = debian_key(served.url, cache_home).partition("-")[0]
        served.down.set()
        none_cached = debian_key_run(served.url, cache_home)
        stages.mkdir(parents=True)
        layers = {"older": 1_700_000_000, "newest": 1_800_000_000, "old": 1_600_000_000}
        for name, mtime in layers.items():
            layer = stages / f"debian-server-{recipe}-{name}.tar"
            layer.write_bytes(b"")
            os.utime(layer, (mtime, mtime))
        (stages / "debian-server-0123456789abcdef-latest.tar").write_bytes(b"")  # made otherwise
        offline = debian_key_run(served.url, cache_home)
    assert none_cached.returncode == 1
    assert "build.sh: no Debian layer is cached to build without the archives" in (
        none_cached.stderr
    )
    assert offline.returncode == 0, offline.stderr
    assert offline.stdout.strip() == f"{recipe}-newest"
    assert "archive_key.py: cannot read the archive's state" in offline.stderr
    assert "HTTP 503" in offline.stderr
    assert (
        f"build.sh: WARNING: reusing the cached debian-server-{recipe}-newest.tar" in offline.stderr
    )
