"""A job's root filesystem: the cached image read-only below, a writable layer of ``spec.disk``
bytes above, both discarded with the job.

    <job dir>/disk.img     sparse file of spec.disk bytes, formatted ext4 (no journal, no
                           reserved blocks), loop-mounted at <job dir>/scratch
    <job dir>/scratch/{upper,work}
    <job dir>/bundle/rootfs  overlayfs: lowerdir = the image's cached rootfs (never written)

Why a loop-mounted filesystem rather than a size-limited tmpfs: tmpfs pages are charged to the
container's memory cgroup, so a benchmark writing files would be OOM-killed at ``spec.memory``
instead of getting ENOSPC at ``spec.disk``. A writer here gets ENOSPC a little before
``spec.disk`` bytes (ext4 metadata takes its share).

Needs root, ``mkfs.ext4`` (e2fsprogs), loop devices and overlayfs.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import subprocess
from pathlib import Path

log = logging.getLogger(__name__)

# ext4 needs room for its own metadata; below this a job could not even create a file.
MIN_DISK_BYTES = 8 * 1024 * 1024
_COMMAND_TIMEOUT = 60.0


class ScratchError(Exception):
    """The job's root filesystem cannot be set up; ``str()`` says which step failed."""


class JobRootfs:
    """Mounted by ``create``; ``remove`` undoes everything and is idempotent."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.scratch = directory / "scratch"
        self.bundle = directory / "bundle"
        self.rootfs = self.bundle / "rootfs"
        self._mounted: list[Path] = []

    @classmethod
    def create(cls, directory: Path, lower: Path, disk_bytes: int) -> JobRootfs:
        """Raises ScratchError, leaving nothing behind."""
        job_rootfs = cls(directory)
        try:
            job_rootfs._create(lower, max(disk_bytes, MIN_DISK_BYTES))
        except (ScratchError, OSError) as exc:
            job_rootfs.remove()
            if isinstance(exc, ScratchError):
                raise
            raise ScratchError(f"cannot prepare the job's root filesystem: {exc}") from None
        return job_rootfs

    def _create(self, lower: Path, disk_bytes: int) -> None:
        self.directory.mkdir(parents=True)
        image = self.directory / "disk.img"
        with image.open("wb") as handle:
            handle.truncate(disk_bytes)
        _run(
            "format the writable layer",
            ["mkfs.ext4", "-q", "-F", "-O", "^has_journal", "-m", "0", "-E",
             "lazy_itable_init=1,nodiscard", str(image)],
        )  # fmt: skip
        self.scratch.mkdir()
        _run("mount the writable layer", ["mount", "-o", "loop", str(image), str(self.scratch)])
        self._mounted.append(self.scratch)
        (self.scratch / "upper").mkdir()
        (self.scratch / "work").mkdir()
        self.rootfs.mkdir(parents=True)
        options = (
            f"lowerdir={lower},upperdir={self.scratch / 'upper'},workdir={self.scratch / 'work'}"
        )
        overlay = ["mount", "-t", "overlay", "overlay", "-o", options, str(self.rootfs)]
        _run("mount the job's root filesystem", overlay)
        self._mounted.append(self.rootfs)

    @classmethod
    def discard(cls, directory: Path) -> None:
        """Unmount and remove a job directory left by a runner that crashed."""
        job_rootfs = cls(directory)
        job_rootfs._mounted = [
            path for path in (job_rootfs.scratch, job_rootfs.rootfs) if path.is_mount()
        ]
        job_rootfs.remove()

    def remove(self) -> None:
        while self._mounted:
            mountpoint = self._mounted.pop()
            try:
                _run("unmount", ["umount", str(mountpoint)])
            except ScratchError as exc:
                # Busy (a process still inside): detach it now, the kernel frees it when idle.
                log.warning("%s; detaching it lazily", exc)
                with contextlib.suppress(ScratchError):
                    _run("unmount lazily", ["umount", "-l", str(mountpoint)])
        if self.directory.exists() and not _has_mounts_under(self.directory):
            shutil.rmtree(self.directory, ignore_errors=True)


def _run(what: str, argv: list[str]) -> None:
    try:
        result = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=_COMMAND_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ScratchError(f"cannot {what}: {exc}") from None
    if result.returncode != 0:
        detail = (result.stderr or result.stdout).strip().splitlines()
        raise ScratchError(
            f"cannot {what}: {detail[-1] if detail else f'exit {result.returncode}'}"
        )


def _has_mounts_under(directory: Path) -> bool:
    # rmtree would descend into a still-mounted filesystem and empty it: never do that.
    prefix = os.fspath(directory.resolve()) + "/"
    try:
        mounts = Path("/proc/self/mounts").read_text()
    except OSError:
        return True
    return any(line.split()[1].startswith(prefix) for line in mounts.splitlines() if line)
