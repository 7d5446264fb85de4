"""Self-update (docs/decisions/runner-releases.md): install the release the server offers, then
restart as it.

The wheel is fetched from the server the runner is connected to, with the runner's own key,
and only from there: an ``update`` naming another host is refused, so the key never leaves for
a third party. The download must hash to the announced SHA-256; it is installed into the
runner's own environment by ``python -m pip install --no-deps --no-index`` (nothing else is
fetched: the release needs what the running version needs). Any failure leaves the running
version in place and says why (``UpdateFailed``).

After an update the runner re-executes itself (``reexec``): same interpreter, same arguments,
same environment, so the same spool, whose unacknowledged results the new process resends.
The release's checksum is recorded beside the environment (``installed_checksum``): a canary
runner reports it in ``ready``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import subprocess
import sys
import tempfile
import urllib.parse
from pathlib import Path
from typing import NoReturn

import httpx

from benchrunner.core.releases import MAX_WHEEL_BYTES, is_sha256_hex, same_version, wheel_version
from benchrunner.protocol import Update
from benchrunner.runner.durable import write_durably

log = logging.getLogger(__name__)

RECORD_NAME = "benchrunner-release.json"
"""In ``sys.prefix``: the version and checksum of the release wheel installed last."""
DOWNLOAD_TIMEOUT = 120.0
INSTALL_TIMEOUT = 600.0
_CHUNK = 1 << 20


class UpdateFailed(Exception):
    """The release was not installed; the message says why. The running version stays."""


def installed_checksum(version: str, prefix: Path | None = None) -> str | None:
    """The SHA-256 of the wheel the running ``version`` was installed from by a self-update,
    or None when it was installed some other way."""
    path = (prefix or Path(sys.prefix)) / RECORD_NAME
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("version") != version:
        return None
    checksum = record.get("checksum")
    return checksum if isinstance(checksum, str) and is_sha256_hex(checksum) else None


def same_origin_url(url: str, host: str) -> str:
    """``url`` resolved against the server ``host`` (http(s)); raises UpdateFailed when it
    points anywhere else."""
    resolved = urllib.parse.urljoin(host.rstrip("/") + "/", url)
    want, got = urllib.parse.urlsplit(host), urllib.parse.urlsplit(resolved)
    if (got.scheme.lower(), got.netloc.lower()) != (want.scheme.lower(), want.netloc.lower()):
        raise UpdateFailed(f"the update's URL is not on this runner's server {host}: {url!r}")
    return resolved


class SelfUpdater:
    def __init__(
        self,
        key: str,
        *,
        python: str = sys.executable,
        prefix: Path | None = None,
        max_bytes: int = MAX_WHEEL_BYTES,
    ) -> None:
        self._key = key
        self._python = python
        self._prefix = prefix or Path(sys.prefix)
        self._max_bytes = max_bytes

    def install(self, update: Update, host: str) -> None:
        """Download, verify and install the release; raises UpdateFailed."""
        url = same_origin_url(update.url, host)
        filename = urllib.parse.unquote(urllib.parse.urlsplit(url).path.rsplit("/", 1)[-1])
        named = wheel_version(filename)
        if named is None or not same_version(named, update.version):
            raise UpdateFailed(f"the update's URL does not name a wheel of {update.version}: {url}")
        checksum = update.checksum.lower()
        if not is_sha256_hex(checksum):
            raise UpdateFailed(f"the update's checksum is not a SHA-256: {update.checksum!r}")
        with tempfile.TemporaryDirectory(prefix="benchrunner-update-") as temp:
            wheel = Path(temp) / filename
            actual = self._download(url, wheel)
            if actual != checksum:
                raise UpdateFailed(
                    f"checksum mismatch: the download hashes to {actual}, "
                    f"the server announced {checksum}"
                )
            self._pip_install(wheel)
        record = json.dumps({"version": update.version, "checksum": checksum})
        try:
            write_durably(self._prefix / RECORD_NAME, record.encode(), temp_prefix=".release-")
        except OSError as exc:  # installed all the same: only a canary runner misses it
            log.warning("cannot record the installed release's checksum: %s", exc)

    def _download(self, url: str, target: Path) -> str:
        """Fetch ``url`` into ``target``; the SHA-256 (hex) of what arrived."""
        digest = hashlib.sha256()
        size = 0
        headers = {"Authorization": f"Bearer {self._key}"}
        try:
            with (
                httpx.stream("GET", url, headers=headers, timeout=DOWNLOAD_TIMEOUT) as response,
                target.open("wb") as file,
            ):
                if response.status_code != 200:
                    response.read()
                    detail = response.text[:200]
                    raise UpdateFailed(f"download failed: HTTP {response.status_code} {detail}")
                for chunk in response.iter_bytes(_CHUNK):
                    size += len(chunk)
                    if size > self._max_bytes:
                        raise UpdateFailed(f"download larger than {self._max_bytes} bytes")
                    digest.update(chunk)
                    file.write(chunk)
        except httpx.HTTPError as exc:
            raise UpdateFailed(f"download failed: {exc}") from None
        except OSError as exc:
            raise UpdateFailed(f"cannot store the download: {exc}") from None
        return digest.hexdigest()

    def _pip_install(self, wheel: Path) -> None:
        command = [
            self._python,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-index",
            # A canary build may carry the version already installed: pip would keep that.
            "--force-reinstall",
            "--disable-pip-version-check",
            "--no-input",
            str(wheel),
        ]
        try:
            done = subprocess.run(
                command,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=INSTALL_TIMEOUT,
                stdin=subprocess.DEVNULL,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise UpdateFailed(f"pip install did not run: {exc}") from None
        if done.returncode != 0:
            lines = (done.stderr or done.stdout).strip().splitlines()
            raise UpdateFailed(f"pip install exited {done.returncode}: {' | '.join(lines[-5:])}")


def start_affinity() -> frozenset[int] | None:
    """The cores this process may run on, to hand to ``reexec`` (None where unsupported)."""
    return frozenset(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None


def reexec(affinity: frozenset[int] | None) -> NoReturn:
    """Replace this process by a new runner on the version now installed, with the arguments,
    environment and cores (``affinity``, from ``start_affinity``) it was started with: the main
    thread is pinned to the housekeeping core by now, and a new process inherits that."""
    if affinity:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, affinity)
    for handler in logging.getLogger().handlers:
        with contextlib.suppress(Exception):
            handler.flush()
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, [sys.executable, "-m", "benchrunner", *sys.argv[1:]])  # noqa: S606
