"""The container images of deploy/images/build.sh, built from Debian packages and the wheel and
run under runc: the server as uid 10001 on a read-only root with a writable data volume,
configured by environment against a fresh PostgreSQL database; the runner's tools inside its
image.

Building takes minutes the first time (mmdebstrap, PyPI), so the built layouts are kept in
``~/.cache/benchrunner-test-images`` under a hash of everything that goes into them; the build
script keeps its Debian and dependency layers there too, so a change to the source tree rebuilds
only the last layer. A build that cannot run fails the test: nothing here skips.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchrunner.client import BenchrunnerClient
from benchrunner.server.admin.bootstrap import bootstrap_admin
from tests.databases import postgres_database
from tests.harness import REPO, free_port, wait_until
from tests.object_store import S3Server
from tests.registry_support import push_blob

# A build from nothing downloads Debian and PyPI packages: far beyond the suite's default.
pytestmark = [pytest.mark.system, pytest.mark.timeout(3600)]

BUILD = REPO / "deploy" / "images" / "build.sh"
VENV_KEY = REPO / "deploy" / "images" / "venv_key.sh"
APPEND_LAYER = REPO / "deploy" / "images" / "append_layer.py"
# A fixed date for every timestamp in the images: the same inputs give the same layers, and the
# cache outlives commits.
SOURCE_DATE_EPOCH = "1764288000"
SERVER_UID = 10001
TOOLS = ("mmdebstrap", "umoci", "runc")
PREFIX = "images/blobs"
IMAGE_KINDS = ("server", "runner")


def image_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "benchrunner-test-images"


def build_sh(kind: str, *args: str | Path, timeout: float) -> subprocess.CompletedProcess[str]:
    """deploy/images/build.sh for ``kind`` with ``args``, at the tests' ``SOURCE_DATE_EPOCH``."""
    return subprocess.run(
        [BUILD, kind, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "SOURCE_DATE_EPOCH": SOURCE_DATE_EPOCH},
        check=False,
    )


@functools.cache
def debian_key(kind: str) -> str:
    """The key of ``kind``'s Debian layer as build.sh computes it at the first call of a test
    session (one state of Debian's archives for the whole session): how it is made and what the
    archives held, so that a layout cached here is built again when a package the image holds
    is updated, as ``make images`` would build it. Offline, build.sh's own fallback: the newest
    cached Debian layer made the same way."""
    done = build_sh(kind, "--debian-key", timeout=120)
    assert done.returncode == 0, f"build.sh {kind} --debian-key failed:\n{done.stderr[-2000:]}"
    return done.stdout.strip()


def inputs_key(kind: str) -> str:
    """A hash of every file the image is made from (the build scripts, the lock, the project's
    metadata and the source tree the wheel is built from) and of its Debian layer's key."""
    digest = hashlib.sha256(f"{kind} {SOURCE_DATE_EPOCH} {debian_key(kind)}\n".encode())
    files = [
        *sorted((REPO / "deploy" / "images").iterdir()),
        REPO / "requirements.lock",
        REPO / "pyproject.toml",
        REPO / "README.md",  # the wheel's long description
        *sorted(
            path
            for path in (REPO / "src").rglob("*")
            if path.is_file() and "__pycache__" not in path.parts
        ),
    ]
    for path in files:
        if path.is_file():
            digest.update(f"{path.relative_to(REPO)}\n".encode())
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:16]


def built_image(kind: str, scratch: Path) -> Path:
    """The OCI layout of ``kind``'s image for this tree, from the cache or built now."""
    if os.geteuid() != 0:
        pytest.fail("building images needs root (mmdebstrap's root mode, chroot, runc)")
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        pytest.fail(f"building images needs {', '.join(missing)} (tools/system-packages.sh)")
    cache = image_cache()
    layout = cache / f"{kind}-{inputs_key(kind)}"
    if (layout / "index.json").exists():
        return layout
    cache.mkdir(parents=True, exist_ok=True)
    # One build per image at a time: a second test process wanting it waits for the first's.
    with (cache / f".{kind}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (layout / "index.json").exists():
            build_image(kind, scratch, cache, layout)
    return layout


def build_image(kind: str, scratch: Path, cache: Path, layout: Path) -> None:
    """Build ``kind``'s image into ``layout``, its Debian and dependency layers kept in the
    cache's ``stages``."""
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", scratch, REPO],
        check=True,
        timeout=600,
        env={**os.environ, "SOURCE_DATE_EPOCH": SOURCE_DATE_EPOCH},
    )
    (wheel,) = scratch.glob("benchrunner-*.whl")
    partial = cache / f".{layout.name}.{uuid.uuid4().hex[:8]}"
    done = build_sh(
        kind, "--out", partial, "--wheel", wheel, "--cache", cache / "stages", timeout=3600
    )
    assert done.returncode == 0, f"build.sh {kind} failed:\n{done.stderr[-6000:]}"
    for old in cache.glob(f"{kind}-*"):  # an older tree's layout and its unpacked bundle
        shutil.rmtree(old, ignore_errors=True)
    partial.rename(layout)


def unpacked(layout: Path, tag: str) -> Path:
    """``umoci unpack`` of the image, kept beside its layout: a bundle whose root file system
    every container of these tests mounts read-only, so it is unpacked once per image."""
    bundle = layout.with_name(f"{layout.name}-bundle")
    if (bundle / "config.json").exists():
        return bundle
    partial = layout.with_name(f".{bundle.name}.{uuid.uuid4().hex[:8]}")
    subprocess.run(
        ["umoci", "unpack", "--image", f"{layout}:{tag}", partial],
        check=True,
        capture_output=True,
        timeout=1200,
    )
    partial.rename(bundle)
    return bundle


class Container:
    """One container of an image under runc, in the host's network namespace, on a read-only
    root (the cached unpacked image)."""

    def __init__(self, layout: Path, tag: str, directory: Path) -> None:
        image = unpacked(layout, tag)
        self.bundle = directory / "bundle"
        self.bundle.mkdir()
        self.state = directory / "runc-state"
        self.name = f"benchrunner-image-test-{uuid.uuid4().hex[:8]}"
        self.config: dict[str, Any] = json.loads((image / "config.json").read_text())
        self.config["root"] = {"path": str(image / "rootfs"), "readonly": True}
        linux = self.config["linux"]
        linux["namespaces"] = [ns for ns in linux["namespaces"] if ns["type"] != "network"]
        self.config["process"]["terminal"] = False

    def set_env(self, **values: str) -> None:
        env = [item for item in self.config["process"]["env"] if item.split("=")[0] not in values]
        self.config["process"]["env"] = env + [f"{k}={v}" for k, v in values.items()]

    def mount(self, source: Path | None, destination: str) -> None:
        """A writable bind mount of ``source``, or a tmpfs when it is None."""
        mount: dict[str, Any] = {"destination": destination}
        if source is None:
            mount |= {"type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "nodev"]}
        else:
            mount |= {"type": "bind", "source": str(source), "options": ["rbind", "rw"]}
        self.config["mounts"].append(mount)

    def _write_config(self) -> None:
        (self.bundle / "config.json").write_text(json.dumps(self.config))

    def runc(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["runc", "--root", str(self.state), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def run(self, args: list[str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """Run ``args`` in the container to the end."""
        self.config["process"]["args"] = args
        self._write_config()
        return self.runc("run", "--bundle", str(self.bundle), self.name, timeout=timeout)

    def start(self, log: Path) -> subprocess.Popen[bytes]:
        """Start the image's own command in the background, its output into ``log``."""
        self._write_config()
        with log.open("wb") as sink:
            return subprocess.Popen(
                ["runc", "--root", str(self.state), "run", "--bundle", str(self.bundle), self.name],
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
            )

    def pid(self) -> int:
        state = self.runc("state", self.name)
        assert state.returncode == 0, state.stderr
        return int(json.loads(state.stdout)["pid"])

    def remove(self) -> None:
        self.runc("kill", self.name, "KILL")
        self.runc("delete", "--force", self.name)


@pytest.fixture(scope="module")
def server_image(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return built_image("server", tmp_path_factory.mktemp("server-wheel"))


@pytest.fixture
def server_container(server_image: Path, tmp_path: Path) -> Iterator[Container]:
    container = Container(server_image, "server", tmp_path)
    yield container
    container.remove()


@contextlib.contextmanager
def serving(
    container: Container, tmp_path: Path, database_url: str, **env: str
) -> Iterator[tuple[str, dict[str, Any], Path]]:
    """The image's server running in ``container`` against ``database_url`` with a writable
    data volume, configured by ``env`` too; yields its URL, its health answer and the data
    volume. Stopped with SIGTERM afterwards."""
    data = tmp_path / "data"
    data.mkdir()
    os.chown(data, SERVER_UID, SERVER_UID)
    port = free_port()
    container.mount(data, "/var/lib/benchrunner")
    container.mount(None, "/tmp")
    container.set_env(
        BENCHRUNNER_DB=database_url,
        BENCHRUNNER_PORT=str(port),
        BENCHRUNNER_LISTEN_HOST="127.0.0.1",
        BENCHRUNNER_REPLICA_NAME="image-test",
        **env,
    )
    log = tmp_path / "server.log"
    process = container.start(log)
    try:
        url = f"http://127.0.0.1:{port}"

        def healthy() -> dict[str, Any] | None:
            assert process.poll() is None, f"the server ended:\n{log.read_text()[-4000:]}"
            try:
                answer = httpx.get(f"{url}/v0/server/health", timeout=5)
            except httpx.TransportError:
                return None
            return answer.json() if answer.status_code == 200 else None

        health = wait_until(healthy, timeout=120, interval=0.5, message="the image's health")
        assert health["status"] == "ok", health
        assert health["engine"] == "postgresql"
        assert health["database_reachable"] is True
        assert health["listen_connected"] is True
        assert health["replica"] == "image-test"
        yield url, health, data
    finally:
        container.runc("kill", container.name, "TERM")
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.mark.postgresql
def test_server_image_answers_health_on_postgresql(
    server_container: Container, tmp_path: Path
) -> None:
    container = server_container
    with (
        postgres_database() as database_url,
        serving(container, tmp_path, database_url) as (
            _url,
            _health,
            data,
        ),
    ):
        # Its process runs as the image's user, on a root it cannot write.
        status = Path(f"/proc/{container.pid()}/status").read_text()
        uid_line = next(line for line in status.splitlines() if line.startswith("Uid:"))
        assert uid_line.split()[1:] == [str(SERVER_UID)] * 4
        write = container.runc(
            "exec",
            container.name,
            "/opt/benchrunner/bin/python",
            "-c",
            "open('/opt/benchrunner/written', 'w')",
        )
        assert write.returncode != 0 and "Read-only file system" in write.stderr, write
        # Its state (the JWT secret) is in the data volume, owned by that user.
        state = [path for path in data.rglob("*") if path.is_file()]
        assert state, "the server wrote nothing into its data volume"
        assert all(path.stat().st_uid == SERVER_UID for path in state)


@pytest.mark.postgresql
def test_server_image_keeps_its_blobs_in_the_object_store(
    server_container: Container, tmp_path: Path, s3: S3Server
) -> None:
    """Configured by the standard AWS variables and ``BENCHRUNNER_BLOB_STORE`` alone: a layer
    pushed through the container's registry is an object in the bucket (moto's S3 server, on
    the host's loopback, which the container shares), comes back whole, and nothing of it is
    in the data volume."""
    bucket = s3.new_bucket()
    layer = os.urandom(300_000)
    with (
        postgres_database() as database_url,
        serving(
            server_container,
            tmp_path,
            database_url,
            BENCHRUNNER_BLOB_STORE=f"s3://{bucket}/{PREFIX}",
            **s3.env(),
        ) as (url, _health, data),
    ):
        admin = bootstrap_admin(database_url, "admin@test.dev")
        with BenchrunnerClient(url, admin) as client:
            client.create_organization("acme", "team")
            client.create_project("acme", "bench", "public")
        token = httpx.get(
            f"{url}/v0/auth/oci/token",
            params={"service": "benchrunner", "scope": "repository:bench:pull,push"},
            auth=("anyone", admin),
            timeout=30,
        )
        assert token.status_code == 200, token.text
        headers = {"Authorization": f"Bearer {token.json()['token']}"}
        with httpx.Client(base_url=f"{url}/v2", headers=headers, timeout=60) as registry:
            digest = push_blob(registry, "bench", layer)
            assert s3.keys(bucket, f"{PREFIX}/oci/blobs/") == [
                f"{PREFIX}/oci/blobs/{digest.replace(':', '/')}"
            ]
            pulled = registry.get(f"/bench/blobs/{digest}")
            assert pulled.status_code == 200, pulled.text
            assert hashlib.sha256(pulled.content).hexdigest() == digest.removeprefix("sha256:")
        assert not (data / "blobs" / "oci").exists()


def test_runner_image_holds_the_runner_and_its_runtime(tmp_path: Path) -> None:
    layout = built_image("runner", tmp_path / "wheel")
    container = Container(layout, "runner", tmp_path)
    try:
        assert container.config["process"]["user"]["uid"] == 0  # runc needs root
        assert container.config["process"]["args"] == [
            "/opt/benchrunner/bin/benchrunner",
            "runner",
            "up",
        ]
        done = container.run(
            ["/bin/sh", "-c", "benchrunner runner up --help && runc --version && mkfs.ext4 -V"]
        )
        assert done.returncode == 0, done.stderr
        assert "--executor" in done.stdout and "--key-file" in done.stdout
        assert "runc version" in done.stdout
    finally:
        container.remove()


def timestamp_based_bytecode(root: Path) -> list[str]:
    """The ``.pyc`` files under ``root`` validated by their source's time (flags 0 in the
    header) rather than its hash: what an import writes, not a compilation under
    ``SOURCE_DATE_EPOCH``, and what made two builds of one Debian layer differ."""
    found = []
    for path in root.rglob("*.pyc"):
        if path.is_file() and not path.is_symlink():
            with path.open("rb") as pyc:
                header = pyc.read(8)
            if int.from_bytes(header[4:8], "little") == 0:
                found.append(str(path.relative_to(root)))
    return sorted(found)


@pytest.mark.parametrize("kind", IMAGE_KINDS)
def test_every_compiled_python_file_is_checked_by_hash(kind: str, tmp_path: Path) -> None:
    """The same inputs give the same layers only if no ``.pyc`` holds the time it was written
    (deploy/images/debian.sh keeps maintainer scripts' imports from writing any)."""
    rootfs = unpacked(built_image(kind, tmp_path / "wheel"), kind) / "rootfs"
    assert any(rootfs.rglob("*.pyc"))
    assert timestamp_based_bytecode(rootfs) == []


def test_venv_key_follows_what_the_venv_is_made_of(tmp_path: Path) -> None:
    """deploy/images/venv_key.sh on the server's real Debian layer: the dependency layer's key
    stays when only the Debian revisions of the packages change (as between a build with
    bookworm-security and a build from a snapshot without it), and changes with the pip wheel
    or the venv module the venv is made with, with the lock's entries and with the date."""
    built_image("server", tmp_path / "wheel")
    (layer,) = (image_cache() / "stages").glob("debian-server-*.tar")
    root = tmp_path / "root"
    root.mkdir()
    subprocess.run(["tar", "-C", root, "-xf", layer], check=True, timeout=600)
    runtime = tmp_path / "runtime.txt"
    runtime.write_text("idna==3.10 --hash=sha256:" + "0" * 64 + "\n")

    def key(epoch: str = SOURCE_DATE_EPOCH) -> str:
        done = subprocess.run(
            [VENV_KEY, root, runtime],
            env={**os.environ, "SOURCE_DATE_EPOCH": epoch},
            capture_output=True, text=True, timeout=120, check=True,
        )  # fmt: skip
        return done.stdout.strip()

    def changed(path: Path, text: str) -> str:
        """The key with ``path`` rewritten as ``text``, the file restored afterwards."""
        before = path.read_bytes()
        path.write_text(text)
        try:
            return key()
        finally:
            path.write_bytes(before)

    first = key()
    assert len(first) == 16 and first == key()
    # Another Debian revision of Python (and of everything else), as the package lists say.
    for listing in (root / "usr/share/benchrunner-packages.txt", root / "var/lib/dpkg/status"):
        text = listing.read_text()
        assert "+deb12u" in text, listing
        listing.write_text(text.replace("+deb12u", "+deb12u9"))
    assert key() == first
    (pip,) = (root / "usr/share/python-wheels").glob("pip-*.whl")
    assert changed(pip, "another pip") != first
    (venv,) = root.glob("usr/lib/python3*/venv/__init__.py")
    assert changed(venv, venv.read_text() + "# another venv module\n") != first
    assert changed(runtime, "idna==3.11 --hash=sha256:" + "1" * 64 + "\n") != first
    assert key(epoch="1764288001") != first
    assert key() == first


def test_append_layer_gives_the_image_umoci_gives(tmp_path: Path) -> None:
    """deploy/images/append_layer.py, which build.sh uses to take the compressed dependency
    layer from its own layout: after the same next umoci steps, the image is the one
    ``umoci raw add-layer`` of that layer's tar would have made, to the manifest's digest."""
    created = "2025-11-28T00:00:00Z"
    tars = []
    for name in ("first", "second"):
        files = tmp_path / f"{name}-files"
        files.mkdir()
        (files / f"{name}.txt").write_text(f"the {name} layer\n")
        tars.append(tmp_path / f"{name}.tar")
        subprocess.run(["tar", "-C", files, "-cf", tars[-1], "."], check=True)

    def umoci(*args: str | Path) -> None:
        subprocess.run(["umoci", *map(str, args)], check=True, capture_output=True, timeout=60)

    def add_layer(image: str, tar: Path) -> None:
        umoci("raw", "add-layer", "--image", image, "--history.created", created,
              "--history.created_by", f"adds {tar.name}", tar)  # fmt: skip

    def layout(name: str) -> Path:
        path = tmp_path / name
        umoci("init", "--layout", path)
        umoci("new", "--image", f"{path}:{name}")
        return path

    second = layout("second")
    add_layer(f"{second}:second", tars[1])
    images = {}
    for name in ("umoci", "appended"):
        path = layout(name)
        add_layer(f"{path}:{name}", tars[0])
        if name == "umoci":
            add_layer(f"{path}:{name}", tars[1])
        else:
            subprocess.run([sys.executable, APPEND_LAYER, path, name, second, "second"], check=True)
        umoci("config", "--image", f"{path}:{name}", "--created", created,
              "--history.created", created, "--config.cmd", "true")  # fmt: skip
        umoci("gc", "--layout", path)
        images[name] = path
    digests = {name: manifest_of(path) for name, path in images.items()}
    assert digests["umoci"] == digests["appended"], digests
    for name, path in images.items():
        blobs = {blob.name for blob in (path / "blobs" / "sha256").iterdir()}
        assert len(blobs) == 4, (name, blobs)  # two layers, a configuration and a manifest


def manifest_of(layout: Path) -> str:
    return str(json.loads((layout / "index.json").read_text())["manifests"][0]["digest"])
