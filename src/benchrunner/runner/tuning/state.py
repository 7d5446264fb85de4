"""The tuning state file: every original value, written (atomically, fsynced) *before* the
setting is changed, so that a runner killed at any instant leaves enough to put the host back.

Kept in ``run/benchrunner/`` under the host root: ``/run`` is emptied at boot, exactly when the
kernel forgets the settings too.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchrunner.runner.durable import sync_directory, write_durably

STATE_DIR = "run/benchrunner"
STATE_NAME = "tune-state.json"
_VERSION = 1
_WRITABLE_PREFIXES = ("sys/", "proc/")


class StateFileError(Exception):
    """The state file exists but cannot be read or does not hold what tuning writes."""


@dataclass(frozen=True)
class Entry:
    setting: str
    path: str
    """Relative to the host root."""
    undo: str | None
    """The value to write back; None: ``path`` is a directory the tuning created (rmdir it),
    or, with ``tasks_from``, the cgroup v1 directory whose tasks were moved out."""
    tasks_from: tuple[str, ...] = ()
    """Cgroup v1 directories whose tasks the restore moves back into ``path``."""
    affinity: dict[str, str] = field(default_factory=dict)
    """Thread id -> the CPU list it was allowed before the move (those not allowed all)."""

    def to_json(self) -> dict[str, Any]:
        raw: dict[str, Any] = {"setting": self.setting, "path": self.path, "undo": self.undo}
        if self.tasks_from:
            raw["tasks_from"] = list(self.tasks_from)
            raw["affinity"] = self.affinity
        return raw

    @classmethod
    def from_json(cls, raw: Any) -> Entry:
        if not isinstance(raw, dict):
            raise StateFileError("an entry is not an object")
        setting, path, undo = raw.get("setting"), raw.get("path"), raw.get("undo")
        if not isinstance(setting, str) or not isinstance(path, str):
            raise StateFileError("an entry lacks its setting or path")
        if undo is not None and not isinstance(undo, str):
            raise StateFileError(f"entry {path!r}: undo is not a string")
        tasks_from, affinity = raw.get("tasks_from", []), raw.get("affinity", {})
        if not isinstance(tasks_from, list) or not all(isinstance(d, str) for d in tasks_from):
            raise StateFileError(f"entry {path!r}: tasks_from is not a list of paths")
        if not isinstance(affinity, dict) or not all(
            key.isdigit() and isinstance(value, str) for key, value in affinity.items()
        ):
            raise StateFileError(f"entry {path!r}: affinity is not thread id -> CPU list")
        # Restore writes as root: only kernel files, and never outside the root.
        for written in (path, *tasks_from):
            if not written.startswith(_WRITABLE_PREFIXES) or ".." in Path(written).parts:
                raise StateFileError(f"entry path {written!r} is not a /sys or /proc file")
        return cls(setting, path, undo, tuple(tasks_from), dict(affinity))


class StateFile:
    """The entries of one tuning, in the order they were applied."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / STATE_NAME
        self.entries: list[Entry] = []

    def exists(self) -> bool:
        return self.path.exists()

    def load(self) -> list[Entry]:
        """Raises StateFileError if the file is unreadable or malformed."""
        try:
            raw = json.loads(self.path.read_bytes())
        except (OSError, ValueError) as exc:
            raise StateFileError(f"cannot read {self.path}: {exc}") from None
        if not isinstance(raw, dict) or raw.get("version") != _VERSION:
            raise StateFileError(f"{self.path} is not a version {_VERSION} tuning state")
        entries = raw.get("entries")
        if not isinstance(entries, list):
            raise StateFileError(f"{self.path} has no entry list")
        self.entries = [Entry.from_json(entry) for entry in entries]
        return self.entries

    def record(self, entry: Entry) -> None:
        """Add ``entry`` and make it durable; raises OSError if it could not be."""
        self.entries.append(entry)
        try:
            self._write()
        except OSError:
            self.entries.pop()
            raise

    def replace(self, entries: list[Entry]) -> None:
        """Keep only ``entries`` (those still to restore); none: remove the file."""
        self.entries = list(entries)
        if self.entries:
            self._write()
        else:
            self.remove()

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)
        sync_directory(self.path.parent)

    def _write(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        body = {
            "version": _VERSION,
            "pid": os.getpid(),
            "entries": [e.to_json() for e in self.entries],
        }
        data = json.dumps(body, indent=1).encode()
        write_durably(self.path, data, temp_prefix=f".{self.path.name}.")
