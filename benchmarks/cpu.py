"""CPU time of processes, read from ``/proc`` (Linux): what a benchmark charges per job."""

from __future__ import annotations

import os
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")


def process_cpu_seconds(pid: int) -> float:
    """User plus system CPU time of one process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def processes_cpu_seconds(name: str) -> float:
    """User plus system CPU time of every live process with this command name (e.g. all
    ``postgres`` backends); processes that ended between two readings are not counted."""
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (entry / "comm").read_text().strip() == name:
                total += process_cpu_seconds(int(entry.name))
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    return total
