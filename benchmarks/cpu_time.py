"""CPU time of processes from ``/proc``: one process, the PostgreSQL backends of one database, and
every PostgreSQL process that works for it.

Times are user + system seconds as the kernel accounts them (``utime`` + ``stime`` of
``/proc/<pid>/stat``, in clock ticks of usually 10 ms), so a figure over a run of many seconds is
exact to about a tick per process. Linux only.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

TICKS_PER_SECOND = os.sysconf("SC_CLK_TCK")
PROC = Path("/proc")


def stat_ticks(stat: str) -> int:
    """``utime`` + ``stime`` from the text of ``/proc/<pid>/stat``.

    The command name (field 2) is in parentheses and may itself contain spaces and
    parentheses, so the fields are counted from the last ``)``.
    """
    fields = stat[stat.rindex(")") + 2 :].split()
    # fields[0] is field 3 (state); utime and stime are fields 14 and 15.
    return int(fields[11]) + int(fields[12])


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds the process ``pid`` has used so far (its threads included,
    its children not)."""
    return stat_ticks((PROC / str(pid) / "stat").read_text()) / TICKS_PER_SECOND


def backend_of(cmdline: bytes, database: str) -> bool:
    """Whether a process title is a PostgreSQL backend connected to ``database``.

    Backends rename themselves ``postgres: [cluster: ]user database host(port) state``.
    """
    words = cmdline.replace(b"\x00", b" ").decode(errors="replace").split()
    return bool(words) and words[0] == "postgres:" and database in words[1:]


def backend_pids(database: str) -> list[int]:
    """The PostgreSQL backends connected to ``database`` now."""
    found = []
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if backend_of((entry / "cmdline").read_bytes(), database):
                found.append(int(entry.name))
    return found


AUXILIARY = (
    "checkpointer",
    "background writer",
    "walwriter",
    "autovacuum launcher",
    "logical replication launcher",
    "stats collector",
    "archiver",
)
"""The titles of PostgreSQL's background processes (after ``postgres: [cluster:]``)."""


def auxiliary(cmdline: bytes) -> bool:
    """Whether a process is the PostgreSQL cluster's own rather than a client's: the postmaster
    and its background processes (``AUXILIARY``), which do a commit's disk work for every
    database."""
    words = cmdline.replace(b"\x00", b" ").decode(errors="replace").split()
    if not words:
        return False
    if words[0].endswith("/postgres") and "-D" in words:
        return True
    title = " ".join(words)
    return words[0] == "postgres:" and title.endswith(AUXILIARY)


def postgres_pids(database: str) -> list[int]:
    """The backends of ``database`` and the cluster's own processes, now."""
    found = []
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            cmdline = (entry / "cmdline").read_bytes()
            if backend_of(cmdline, database) or auxiliary(cmdline):
                found.append(int(entry.name))
    return found


def threads_cpu_ns(pids: Iterable[int]) -> int:
    """Nanoseconds on a CPU of every thread alive now of the processes ``pids``, from
    ``/proc/<pid>/task/<tid>/schedstat``: exact to the nanosecond where ``stat`` counts ticks,
    so the difference across one request is that request's cost. A thread that exits between
    two readings takes its time with it."""
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            for task in (PROC / str(pid) / "task").iterdir():
                with contextlib.suppress(OSError, ValueError, IndexError):
                    total += int((task / "schedstat").read_text().split()[0])
    return total


class BackendCpu:
    """CPU seconds of the PostgreSQL backends of one database over a window.

    Backends come and go with their connections, and an exited backend's time is gone from
    ``/proc``, so a thread samples every ``interval`` seconds and keeps each backend's latest
    figure; a backend that lives for less than one interval is missed (connection pools keep
    theirs for the whole run). Backends already there when the window opens count from their
    time at that moment.
    """

    def __init__(
        self,
        database: str,
        interval: float = 0.25,
        pids: Callable[[str], list[int]] = backend_pids,
    ) -> None:
        self.database = database
        self.pids = pids
        self.interval = interval
        self._baseline: dict[int, int] = {}
        self._latest: dict[int, int] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _read(self) -> dict[int, int]:
        found: dict[int, int] = {}
        for pid in self.pids(self.database):
            with contextlib.suppress(OSError, ValueError, IndexError):
                found[pid] = stat_ticks((PROC / str(pid) / "stat").read_text())
        return found

    def _sample(self) -> None:
        self._latest.update(self._read())

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def start(self) -> None:
        self._baseline = self._read()
        self._latest = dict(self._baseline)
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def stop(self) -> float:
        """Close the window; CPU seconds the database's backends used within it."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._sample()
        ticks = sum(t - self._baseline.get(pid, 0) for pid, t in self._latest.items())
        return ticks / TICKS_PER_SECOND


@contextlib.contextmanager
def backends_cpu(database: str | None, every_process: bool = False) -> Iterator[list[float]]:
    """Measure the backends of ``database`` over the ``with`` block; the yielded list holds
    their CPU seconds afterwards (nothing is measured when ``database`` is None). With
    ``every_process``, the cluster's own processes too (``auxiliary``): on a cluster nothing
    else uses, every PostgreSQL process's CPU spent for this database."""
    result: list[float] = []
    if database is None:
        yield result
        return
    meter = BackendCpu(database, pids=postgres_pids if every_process else backend_pids)
    meter.start()
    try:
        yield result
    finally:
        result.append(meter.stop())
