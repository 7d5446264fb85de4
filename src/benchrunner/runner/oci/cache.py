"""The runner's image cache: blobs by digest, and unpacked root filesystems by manifest digest.

    <root>/blobs/sha256/<hex>     manifests, configs and layers exactly as downloaded
    <root>/rootfs/sha256/<hex>    an image's layers applied in order (read-only use only)
    <root>/tmp/                   downloads and unpacks in progress

Everything enters the cache by an atomic rename after its sha256 was checked (blobs) or every
layer was applied (root filesystems), so a crash leaves only ``tmp/`` debris, never a wrong
entry; ``tmp/`` is emptied when the cache is opened. Several runners may share one cache: the
first rename wins and the loser's copy is discarded.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path

from benchrunner.runner.oci.unpack import UnpackError, apply_layer

_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


class CacheError(Exception):
    """A blob's content does not match its digest, a layer cannot be unpacked, or the cache
    directory is unusable; ``str()`` says which."""


def check_digest(digest: str) -> str:
    """The hex part of a ``sha256:<64 hex>`` digest; CacheError for anything else (other
    algorithms are not accepted: every digest this project writes is sha256)."""
    if not _DIGEST.fullmatch(digest):
        raise CacheError(f"unsupported or malformed digest {digest!r} (expected sha256:<64 hex>)")
    return digest.removeprefix("sha256:")


class ImageCache:
    def __init__(self, root: Path) -> None:
        """Raises CacheError if the directories cannot be created."""
        self.root = root
        self._blobs = root / "blobs" / "sha256"
        self._rootfs = root / "rootfs" / "sha256"
        self._tmp = root / "tmp"
        try:
            shutil.rmtree(self._tmp, ignore_errors=True)
            for directory in (self._blobs, self._rootfs, self._tmp):
                directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CacheError(f"image cache {root} is unusable: {exc}") from None

    def blob(self, digest: str) -> Path | None:
        """The cached blob ``digest``, or None."""
        path = self._blobs / check_digest(digest)
        return path if path.is_file() else None

    def store_blob(self, digest: str, chunks: Iterable[bytes]) -> Path:
        """Write ``chunks`` as the blob ``digest`` and return its path. Raises CacheError (the
        cache is unchanged) if their sha256 is not ``digest``."""
        expected = check_digest(digest)
        target = self._blobs / expected
        fd, name = tempfile.mkstemp(dir=self._tmp, prefix="blob-")
        partial = Path(name)
        try:
            hasher = hashlib.sha256()
            with os.fdopen(fd, "wb") as handle:
                for chunk in chunks:
                    hasher.update(chunk)
                    handle.write(chunk)
            actual = hasher.hexdigest()
            if actual != expected:
                raise CacheError(f"blob {digest} has the wrong content (its sha256 is {actual})")
            partial.replace(target)
        finally:
            with contextlib.suppress(FileNotFoundError):
                partial.unlink()
        return target

    def rootfs(self, manifest_digest: str, layers: list[Path]) -> Path:
        """The root filesystem of the image ``manifest_digest`` made of ``layers`` (lowest
        first), unpacked on first use. Raises CacheError naming a refused layer."""
        target = self._rootfs / check_digest(manifest_digest)
        if target.is_dir():
            return target
        partial = Path(tempfile.mkdtemp(dir=self._tmp, prefix="rootfs-"))
        try:
            # The container's / gets the mode of this directory.
            partial.chmod(0o755)
            for layer in layers:
                try:
                    apply_layer(partial, layer)
                except UnpackError as exc:
                    raise CacheError(f"image {manifest_digest}: {exc}") from None
            try:
                partial.rename(target)
            except OSError:
                if not target.is_dir():
                    raise
        finally:
            shutil.rmtree(partial, ignore_errors=True)
        return target
