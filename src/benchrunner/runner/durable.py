"""Files that must survive a crash whole: written to a temporary file in the same directory,
fsynced, renamed over the target and the directory fsynced. A reader sees the old file or the
new one, never part of one."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def write_durably(
    target: Path,
    data: bytes,
    *,
    temp_prefix: str,
    temp_name: str | None = None,
    spare: Path | None = None,
) -> None:
    """Replace ``target`` by ``data`` (mode 0600), durably. The temporary file is named
    ``temp_prefix*`` in ``target``'s directory (``temp_prefix + temp_name`` when the caller is
    the only writer of that name: no random name to draw), or is ``spare``, a file of the
    caller's in that directory that is written over (no file made: see ``spool.py``); it is
    removed on failure. Raises OSError."""
    if spare is not None or temp_name is not None:
        temp = spare or target.with_name(temp_prefix + str(temp_name))
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
    else:
        fd, name = tempfile.mkstemp(prefix=temp_prefix, dir=target.parent)
        temp = Path(name)
    try:
        write_over(fd, data, sync=True)
        temp.replace(target)
    except BaseException:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise
    sync_directory(target.parent)


def write_over(fd: int, data: bytes, *, sync: bool) -> None:
    """Write ``data`` over the file open as ``fd`` (from its start), cut it to that length,
    fsync it if ``sync``, and close it. Cut after the write, not emptied first: ext4 flushes a
    file emptied by a truncation when it is closed (``auto_da_alloc``)."""
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.ftruncate(fd, len(data))
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def sync_directory(directory: Path) -> None:
    """Make the entries of ``directory`` (a rename, a removal) durable."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
