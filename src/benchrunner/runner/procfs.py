"""The process table as Linux shows it in ``/proc``: what the runner reads to find the processes
a killed runner left behind (``inflight.py``). Elsewhere every function answers "nothing".
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

PROC = Path("/proc")
_ENVIRON_LIMIT = 1 << 20


@dataclass(frozen=True)
class ProcessInfo:
    """One process as one look at ``/proc`` saw it. Two looks at one process are equal: its
    pid and start name it, whatever state or group each look found it in."""

    pid: int
    state: str = field(compare=False)
    """One letter: ``R``, ``S``, ``D``, ``T``, ``Z`` (zombie), ``X`` (dead)..."""
    pgid: int = field(compare=False)
    start: int
    """When it started, in clock ticks after boot: with the pid, it names one process."""

    @property
    def ended(self) -> bool:
        return self.state in ("Z", "X")


def boot_id() -> str:
    """This boot's random id (empty where unknown): a pid recorded in another boot means
    nothing now."""
    try:
        return (PROC / "sys" / "kernel" / "random" / "boot_id").read_text().strip()
    except OSError:
        return ""


def process(pid: int) -> ProcessInfo | None:
    """The process ``pid``, or None if there is none (or no ``/proc``)."""
    try:
        raw = (PROC / str(pid) / "stat").read_bytes()
    except OSError:
        return None
    # "pid (comm) state ppid pgrp session ...": comm may hold spaces and parentheses.
    fields = raw[raw.rfind(b")") + 2 :].split()
    try:
        return ProcessInfo(pid, fields[0].decode(), int(fields[2]), int(fields[19]))
    except (IndexError, ValueError):
        return None


def processes() -> Iterator[ProcessInfo]:
    """Every process visible in ``/proc`` now (none where there is no ``/proc``)."""
    try:
        entries = list(PROC.iterdir())
    except OSError:
        return
    for entry in entries:
        if entry.name.isdigit() and (info := process(int(entry.name))) is not None:
            yield info


def carries(pid: int, variable: str, value: str) -> bool:
    """Whether process ``pid`` has ``variable=value`` in the environment it was started with.
    False if that cannot be read (another user's process, or gone)."""
    try:
        with (PROC / str(pid) / "environ").open("rb") as handle:
            environ = handle.read(_ENVIRON_LIMIT)
    except OSError:
        return False
    return f"{variable}={value}".encode() in environ.split(b"\0")
