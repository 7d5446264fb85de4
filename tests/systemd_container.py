"""A Debian machine with systemd as its init, booted in a podman container: what the deploy
guide's ``systemctl`` blocks run on (tests/system/test_guides.py).

The root file system is built once by mmdebstrap and kept in the image cache of
tests/system/test_images.py under a hash of how it is made; each container runs on an overlay
of it (``--rootfs DIR:O``), so what a test writes there goes with the container."""

from __future__ import annotations

import fcntl
import hashlib
import io
import os
import shutil
import subprocess
import tarfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.harness import wait_until
from tests.system.test_images import image_cache

PACKAGES = ("systemd", "systemd-sysv", "dbus", "python3", "libstdc++6", "curl",
            "ca-certificates", "caddy", "pebble")  # fmt: skip
"""systemd as init; Python 3.11 for a virtual environment made on a Debian 12 host
(``/opt/benchrunner``), with the C++ runtime NumPy's and SciPy's wheels link; curl for the
guide's health checks; Caddy, as the guide installs it, and Pebble, the ACME CA it gets its
certificate from in the test (tests/acme_ca.py), with the system's trust store for its roots."""

DISABLED = ("multi-user.target.wants/caddy.service",)
"""Caddy is started by the test that runs it (it takes ports 80 and 443 of this machine's
network), not at every boot."""

MASKED = (
    "getty.target",
    "systemd-sysctl.service",
    "systemd-binfmt.service",
    "proc-sys-fs-binfmt_misc.automount",
    "systemd-modules-load.service",
)
"""What a privileged container's systemd would do to the host it shares a kernel and a
network namespace with: logins on its consoles, its sysctl and binfmt settings, modules."""

BOOT_TIMEOUT = 120


def systemd_root(release: str = "bookworm") -> Path:
    """The root file system, from the cache or built now (about a minute and a half, from the
    Debian mirror: ``DEBIAN_MIRROR``, by default deb.debian.org)."""
    if os.geteuid() != 0 or shutil.which("mmdebstrap") is None:
        pytest.fail(
            "a systemd root file system needs root and mmdebstrap (tools/system-packages.sh)"
        )
    how = f"{release} minbase {' '.join(PACKAGES)} masked {' '.join(MASKED + DISABLED)}"
    key = hashlib.sha256(how.encode()).hexdigest()[:16]
    cache = image_cache()
    root = cache / f"systemd-{release}-{key}"
    if root.is_dir():
        return root
    cache.mkdir(parents=True, exist_ok=True)
    with (cache / ".systemd.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not root.is_dir():
            partial = cache / f".{root.name}.partial"
            shutil.rmtree(partial, ignore_errors=True)
            mirror = os.environ.get("DEBIAN_MIRROR", "http://deb.debian.org/debian")
            command = [
                "mmdebstrap",
                "--quiet",
                "--variant=minbase",
                f"--include={','.join(PACKAGES)}",
                release,
                str(partial),
                mirror,
            ]
            done = subprocess.run(command, capture_output=True, text=True, timeout=1200)
            assert done.returncode == 0, f"mmdebstrap: {done.stderr}"
            units = partial / "etc" / "systemd" / "system"
            for unit in MASKED:
                (units / unit).symlink_to("/dev/null")
            for link in DISABLED:
                (units / link).unlink()
            for old in cache.glob(f"systemd-{release}-*"):
                shutil.rmtree(old, ignore_errors=True)
            partial.rename(root)
    return root


def podman(env: Mapping[str, str], *args: str, stdin: bytes | None = None) -> str:
    """Run podman; a failure fails the test with podman's own words."""
    done = subprocess.run(
        ["podman", *args], env=env, input=stdin, capture_output=True, timeout=300, check=False
    )
    assert done.returncode == 0, f"podman {' '.join(args[:3])}: {done.stderr.decode().strip()}"
    return done.stdout.decode()


@dataclass
class Machine:
    """A booted container: ``name`` for ``podman exec``, with podman's environment ``env``."""

    name: str
    env: Mapping[str, str]

    def run(self, *command: str) -> str:
        return podman(self.env, "exec", self.name, *command)

    def add_files(self, files: Mapping[str, Path]) -> None:
        """Copy regular files into the machine (a path there: a file here), with their modes
        and numeric owners; the directories above them are made as they are here."""
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            for there, here in sorted(files.items()):
                tar.add(here, arcname=there.lstrip("/"), recursive=False)
        self.run("true")  # started
        podman(
            self.env,
            "exec",
            "-i",
            self.name,
            "tar",
            "-C",
            "/",
            "-xpf",
            "-",
            stdin=buffer.getvalue(),
        )

    def append(self, path: str, lines: list[str]) -> None:
        text = "".join(f"{line}\n" for line in lines).encode()
        podman(self.env, "exec", "-i", self.name, "sh", "-c", 'cat >> "$1"', "sh", path, stdin=text)

    def remove(self) -> None:
        """Stop and remove the machine; once removed, a no-op."""
        podman(self.env, "rm", "-f", "-i", "-t", "30", self.name)


def boot(name: str, env: Mapping[str, str], volumes: Mapping[Path, str]) -> Machine:
    """Boot the root file system with systemd as PID 1: privileged (its services' sandboxes
    make namespaces and mounts), on the host's network, with ``volumes`` (a directory here:
    where, and how, there) mounted; returns once its boot ended, every unit started."""
    root = systemd_root()
    mounts = [arg for here, there in volumes.items() for arg in ("-v", f"{here}:{there}")]
    podman(
        env,
        "run",
        "-d",
        "--name",
        name,
        "--systemd=always",
        "--privileged",
        "--network",
        "host",
        *mounts,
        "--rootfs",
        f"{root}:O",
        "/lib/systemd/systemd",
    )
    machine = Machine(name, env)

    def listening() -> bool:
        probe = ["podman", "exec", name, "test", "-S", "/run/systemd/private"]
        return subprocess.run(probe, env=env, capture_output=True, timeout=60).returncode == 0

    wait_until(listening, timeout=BOOT_TIMEOUT, interval=0.2, message="systemd's socket")
    done = subprocess.run(
        ["podman", "exec", name, "systemctl", "is-system-running", "--wait"],
        env=env,
        capture_output=True,
        text=True,
        timeout=BOOT_TIMEOUT,
        check=False,
    )
    if done.stdout.strip() != "running":
        failed = subprocess.run(
            ["podman", "exec", name, "systemctl", "--failed", "--no-pager"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        machine.remove()
        pytest.fail(f"systemd's boot: {done.stdout}{done.stderr}\n{failed.stdout}")
    return machine
