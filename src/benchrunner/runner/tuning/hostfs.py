"""The host's kernel files (``/sys``, ``/proc``, ``/dev``) under one root that tests replace
with a directory tree of their own: every read and write of the tuning code goes through here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from benchrunner.runner.tuning.cpulist import parse_cpulist

_READ_LIMIT = 1 << 16


@dataclass(frozen=True)
class HostFs:
    """``root`` is ``/`` on a real host. Paths given to the methods are relative to it
    (``"sys/kernel/mm/transparent_hugepage/enabled"``)."""

    root: Path = Path("/")

    def path(self, relative: str) -> Path:
        return self.root / relative.lstrip("/")

    def read(self, relative: str) -> str | None:
        """The file's text, stripped; None if it is absent or cannot be read (``read_present``
        tells the two apart)."""
        try:
            return self.read_present(relative)
        except OSError:
            return None

    def read_present(self, relative: str) -> str | None:
        """The file's text, stripped; None if it does not exist. Raises OSError when it exists
        but cannot be read (EACCES, EISDIR, EIO...): its value is then unknown, not absent."""
        try:
            with self.path(relative).open("rb") as handle:
                return handle.read(_READ_LIMIT).decode("utf-8", errors="replace").strip()
        except (FileNotFoundError, NotADirectoryError):
            return None

    def write(self, relative: str, value: str) -> None:
        """Write ``value`` in one write, as ``echo value > file`` does (kernel files ignore the
        truncation; a plain file needs it). Never creates the file. Raises OSError (EACCES,
        EPERM, EINVAL, ENOENT...) when the kernel refuses it."""
        fd = os.open(self.path(relative), os.O_WRONLY | os.O_TRUNC | os.O_CLOEXEC)
        try:
            os.write(fd, value.encode())
        finally:
            os.close(fd)

    def make_directory(self, relative: str) -> None:
        """Create a directory (a cgroup: the kernel fills it with its files). Raises OSError."""
        self.path(relative).mkdir()

    def remove_directory(self, relative: str) -> None:
        """Remove a directory made by ``make_directory``. Raises OSError."""
        self.path(relative).rmdir()

    def set_affinity(self, task: int, cores: frozenset[int]) -> None:
        """Allow thread ``task`` only ``cores`` (``sched_setaffinity``). Raises OSError (ESRCH:
        it has ended; EINVAL: none of the cores is allowed to it)."""
        os.sched_setaffinity(task, cores)

    def exists(self, relative: str) -> bool:
        return self.path(relative).exists()

    def names(self, relative: str) -> list[str]:
        """Entries of a directory, sorted; empty if it is absent."""
        try:
            return sorted(entry.name for entry in self.path(relative).iterdir())
        except OSError:
            return []

    def online_cores(self) -> frozenset[int] | None:
        text = self.read("sys/devices/system/cpu/online")
        if text is None:
            return None
        try:
            return parse_cpulist(text)
        except ValueError:
            return None

    def selected_value(self, relative: str) -> str | None:
        """The bracketed choice of a sysfs menu file (``always [madvise] never`` -> madvise),
        or the whole text where nothing is bracketed."""
        text = self.read(relative)
        if text is None:
            return None
        start, end = text.find("["), text.find("]")
        return text[start + 1 : end] if 0 <= start < end else text
