"""What an executor reads back after an iteration besides its output streams: the job's
``file_paths``, as text (Bencher's ``--file``) or as sizes (``--file-size``), and the command's
wall time (``--build-time``). A file that is refused, unreadable or missing is noted on the
iteration's stderr and left out; the others are still taken."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from typing import TypeVar

from benchrunner.runner.confined import ConfinedPathError

T = TypeVar("T")


def each_file(
    names: Sequence[str], fetch: Callable[[str], T | None], notes: list[str]
) -> dict[str, T]:
    """``fetch(name)`` of every name that gives something (None: the file does not exist)."""
    found: dict[str, T] = {}
    for name in names:
        try:
            value = fetch(name)
        except ConfinedPathError as exc:
            notes.append(f"[benchrunner: file_path {name!r} refused: {exc}]")
            continue
        except OSError as exc:
            notes.append(f"[benchrunner: file_path {name!r} could not be read: {exc.strerror}]")
            continue
        if value is None:
            notes.append(f"[benchrunner: file_path {name!r} not found]")
            continue
        found[name] = value
    return found


def command_time(argv: Sequence[str], seconds: float) -> dict[str, float]:
    """An iteration's ``build_time``: the command as Bencher names its benchmark (its words
    joined by spaces, quoted where needed) -> its wall time."""
    return {shlex.join(argv): seconds}
