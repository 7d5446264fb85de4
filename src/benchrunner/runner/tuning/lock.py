"""One tuned runner per host: an exclusive ``flock`` on a file next to the state file, held for
the runner's life (the kernel drops it when the process dies, however it dies)."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

LOCK_NAME = "tune.lock"


class HostLockedError(Exception):
    """Another process holds the tuning lock."""


class HostLock:
    def __init__(self, directory: Path) -> None:
        self.path = directory / LOCK_NAME
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock without waiting. Raises HostLockedError naming the holder's pid,
        OSError if the lock file cannot be created."""
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise HostLockedError(
                f"another tuned runner (pid {holder}) holds {self.path}"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
