"""Reading a secret the operator keeps in a file, like an SSH private key: the runner token
(``runner up --key-file``) and the result signing key (``--signing-key``)."""

from __future__ import annotations

import os
import stat
from pathlib import Path


def read_owner_only(path: Path, what: str, limit: int) -> bytes:
    """Up to ``limit`` bytes of ``path``, which must be a regular file no one but its owner may
    read or write; ``what`` names it in errors. Raises ValueError with the reason."""
    try:
        # Non-blocking: a FIFO given by mistake fails the check below instead of hanging here.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise ValueError(f"cannot read {what} {path}: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(f"{what} {path} is not a regular file")
        if info.st_mode & 0o077:
            raise ValueError(
                f"{what} {path} is open to other users (mode "
                f"{stat.S_IMODE(info.st_mode):04o}); run: chmod 600 {path}"
            )
        return os.read(fd, limit)
    finally:
        os.close(fd)
