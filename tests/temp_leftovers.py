"""A test session's own temporary directory, and what its tests leave in it.

Every process a test session starts (servers, runners, CLIs, the jobs they run) inherits
``TMPDIR``; pointed at a directory of the session's own, whatever they leave behind is the
session's alone, even while other sessions (xdist workers, other checkouts) share ``/tmp``.
The session removes the directory at its end and reports the ``benchrunner-*`` entries found
in it: the product and its tests clean up after themselves.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

LEFTOVER_PATTERN = "benchrunner-*"


@dataclass
class LeftoverWatch:
    """Entries matching ``LEFTOVER_PATTERN`` in ``directory``, each with the first test after
    which it was seen (a module's shared fixtures may hold one across tests: only what is still
    there at the session's end counts)."""

    directory: Path
    first_seen: dict[str, str] = field(default_factory=dict)

    @classmethod
    def create(cls) -> LeftoverWatch:
        """A new, empty directory in the current temporary directory."""
        return cls(Path(tempfile.mkdtemp(prefix="pytest-tmpdir-")))

    def look(self, test: str) -> None:
        for entry in self._entries():
            self.first_seen.setdefault(entry, test)

    def leftovers(self) -> dict[str, str]:
        """Entry -> the test after which it was first seen (``at the session's end`` if none)."""
        return {name: self.first_seen.get(name, "the session's end") for name in self._entries()}

    def remove(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)

    def _entries(self) -> list[str]:
        return sorted(path.name for path in self.directory.glob(LEFTOVER_PATTERN))


def leftover_report(leftovers: dict[str, str]) -> str:
    lines = [f"  {name}  (first seen after {test})" for name, test in leftovers.items()]
    return (
        f"{len(leftovers)} {LEFTOVER_PATTERN} entr{'y' if len(leftovers) == 1 else 'ies'} "
        "left in the session's temporary directory:\n" + "\n".join(lines)
    )
