"""Apply OCI image layers to a root filesystem directory without ever writing outside it.

A layer is a tar archive, gzip- or zstd-compressed or not (recognised by its magic bytes, so
Docker's media types work too). Entries are applied in order, as the OCI image spec says:
``.wh.<name>`` deletes ``<name>`` from the layers below, ``.wh..wh..opq`` empties its directory
of what the layers below put there, and a later entry replaces an earlier one.

Safety rules (a hostile layer is refused with an UnpackError naming the entry):

- entry names and hard-link targets are relative to the root: a leading ``/`` is stripped (as
  container runtimes do), and any ``..`` component is refused outright;
- paths are resolved one component at a time from a descriptor of the root (``*at`` calls with
  ``O_NOFOLLOW``, see ``runner/confined.py``), never through the host's path resolution, so
  nothing is written through a symlink to outside the root;
- a symlink met as a *parent* component is followed inside the root: an absolute target starts
  again at the root (what it means inside the container), a relative target that climbs above
  the root is refused;
- a symlink *entry* is created as it is, never followed while unpacking;
- a hard link must name an existing regular file or symlink inside the root;
- character and block devices are refused (the runtime provides ``/dev``); FIFOs are created.

Extended attributes in PAX headers are not applied.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import shutil
import stat
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, cast

import zstandard

from benchrunner.runner.confined import DIR_FLAGS, ConfinedPathError, open_directory

WHITEOUT_PREFIX = ".wh."
OPAQUE_WHITEOUT = ".wh..wh..opq"

_GZIP_MAGIC = b"\x1f\x8b"
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_CHUNK = 1 << 20


class UnpackError(Exception):
    """The layer is refused or unreadable; ``str()`` names the entry and the reason."""


def apply_layer(rootfs: Path, layer: Path) -> None:
    """Apply the layer file ``layer`` on top of the directory ``rootfs``.

    Raises UnpackError for a hostile or corrupt layer; ``rootfs`` is then partly written and
    should be discarded.
    """
    root_fd = os.open(rootfs, DIR_FLAGS)
    try:
        with layer.open("rb") as raw, _decompressed(raw) as stream:
            try:
                with tarfile.open(fileobj=stream, mode="r|") as archive:
                    _apply(root_fd, archive)
            except (tarfile.TarError, EOFError, zstandard.ZstdError, gzip.BadGzipFile) as exc:
                raise UnpackError(f"layer {layer.name} is not a valid tar archive: {exc}") from None
            except UnpackError:
                raise
            except OSError as exc:
                raise UnpackError(f"layer {layer.name} could not be applied: {exc}") from None
    finally:
        os.close(root_fd)


@contextlib.contextmanager
def _decompressed(raw: IO[bytes]) -> Iterator[IO[bytes]]:
    magic = raw.read(4)
    raw.seek(0)
    if magic.startswith(_GZIP_MAGIC):
        with gzip.GzipFile(fileobj=raw, mode="rb") as stream:
            yield cast(IO[bytes], stream)
    elif magic == _ZSTD_MAGIC:
        with zstandard.ZstdDecompressor().stream_reader(raw) as zstream:
            yield zstream
    else:
        yield raw


def _apply(root_fd: int, archive: tarfile.TarFile) -> None:
    created: set[tuple[str, ...]] = set()
    for member in archive:
        parts = _entry_parts(member.name, member.name)
        if not parts:
            continue  # the root itself ("./"): its metadata is the runtime's business
        name = parts[-1]
        if name == OPAQUE_WHITEOUT:
            with _parent(root_fd, parts, member.name) as parent:
                _empty_directory(parent, parts[:-1], created)
            continue
        if name.startswith(WHITEOUT_PREFIX):
            with _parent(root_fd, parts, member.name) as parent:
                _remove(parent, name.removeprefix(WHITEOUT_PREFIX))
            continue
        with _parent(root_fd, parts, member.name) as parent:
            _write_entry(root_fd, parent, name, member, archive)
        created.add(parts)


def _entry_parts(path: str, entry: str) -> tuple[str, ...]:
    parts = tuple(part for part in path.split("/") if part not in ("", "."))
    if ".." in parts:
        raise UnpackError(f"layer entry {entry!r}: '..' in {path!r} could escape the root")
    if any("\x00" in part for part in parts):
        raise UnpackError(f"layer entry {entry!r}: NUL byte in path")
    return parts


@contextlib.contextmanager
def _parent(root_fd: int, parts: tuple[str, ...], entry: str) -> Iterator[int]:
    fd = _open_directory(root_fd, parts[:-1], entry, create=True)
    try:
        yield fd
    finally:
        os.close(fd)


def _open_directory(root_fd: int, parts: tuple[str, ...], entry: str, *, create: bool) -> int:
    """A new descriptor of the directory ``parts`` under the root, following symlinks only
    inside the root and creating missing directories if ``create``."""
    try:
        return open_directory(root_fd, parts, create=create)
    except ConfinedPathError as exc:
        raise UnpackError(f"layer entry {entry!r}: {exc}") from None


def _write_entry(
    root_fd: int, parent: int, name: str, member: tarfile.TarInfo, archive: tarfile.TarFile
) -> None:
    entry = member.name
    if member.ischr() or member.isblk():
        raise UnpackError(f"layer entry {entry!r}: device nodes are not allowed in an image")
    existing = _lstat(parent, name)
    if member.isdir():
        if existing is not None and not stat.S_ISDIR(existing.st_mode):
            _remove(parent, name)
            existing = None
        if existing is None:
            os.mkdir(name, 0o700, dir_fd=parent)
        fd = os.open(name, DIR_FLAGS, dir_fd=parent)
        try:
            os.fchown(fd, member.uid, member.gid)
            os.fchmod(fd, stat.S_IMODE(member.mode))
        finally:
            os.close(fd)
        return
    if member.islnk():
        # Resolved before removing the old entry: a link may name the path it replaces.
        _hard_link(root_fd, parent, name, member)
        return
    if existing is not None:
        _remove(parent, name)
    if member.issym():
        os.symlink(member.linkname, name, dir_fd=parent)
        os.chown(name, member.uid, member.gid, dir_fd=parent, follow_symlinks=False)
    elif member.isfifo():
        os.mkfifo(name, stat.S_IMODE(member.mode), dir_fd=parent)
        os.chown(name, member.uid, member.gid, dir_fd=parent, follow_symlinks=False)
    elif member.isreg():
        _write_file(parent, name, member, archive)
    else:
        raise UnpackError(f"layer entry {entry!r}: unsupported tar entry type {member.type!r}")


def _write_file(parent: int, name: str, member: tarfile.TarInfo, archive: tarfile.TarFile) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(name, flags, 0o600, dir_fd=parent)
    with os.fdopen(fd, "wb") as handle:
        source = archive.extractfile(member)
        if source is not None:
            shutil.copyfileobj(source, handle, _CHUNK)
        # chown before chmod: chown clears the setuid/setgid bits.
        os.fchown(fd, member.uid, member.gid)
        os.fchmod(fd, stat.S_IMODE(member.mode))
        os.utime(fd, (member.mtime, member.mtime))


def _hard_link(root_fd: int, parent: int, name: str, member: tarfile.TarInfo) -> None:
    entry = member.name
    target = _entry_parts(member.linkname, entry)
    if not target:
        raise UnpackError(f"layer entry {entry!r}: hard link to the root")
    target_parent = _open_directory(root_fd, target[:-1], entry, create=False)
    try:
        info = _lstat(target_parent, target[-1])
        if info is None:
            raise UnpackError(
                f"layer entry {entry!r}: hard link target {member.linkname!r} does not exist"
            )
        if not (stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode)):
            raise UnpackError(
                f"layer entry {entry!r}: hard link target {member.linkname!r} is not a file"
            )
        existing = _lstat(parent, name)
        if existing is not None:
            if os.path.samestat(existing, info):
                return
            _remove(parent, name)
        os.link(
            target[-1],
            name,
            src_dir_fd=target_parent,
            dst_dir_fd=parent,
            follow_symlinks=False,
        )
    finally:
        os.close(target_parent)


def _empty_directory(directory: int, parts: tuple[str, ...], created: set[tuple[str, ...]]) -> None:
    """An opaque whiteout: remove what lower layers put in the directory, keep this layer's."""
    for child in os.listdir(directory):
        if (*parts, child) not in created:
            _remove(directory, child)


def _remove(parent: int, name: str) -> None:
    info = _lstat(parent, name)
    if info is None:
        return
    if stat.S_ISDIR(info.st_mode):
        shutil.rmtree(name, dir_fd=parent)
    else:
        os.unlink(name, dir_fd=parent)


def _lstat(parent: int, name: str) -> os.stat_result | None:
    try:
        return os.lstat(name, dir_fd=parent)
    except FileNotFoundError:
        return None
