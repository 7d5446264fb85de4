"""Which CPU cores the runner's own threads use and which the benchmark gets.

With more than one allowed core, the lowest one is the *housekeeping* core: the runner's threads
(channel receiver, heartbeat, output readers, timers) live there, and job processes get the rest,
so a heartbeat never preempts the benchmark. With one core nothing is pinned.

On Linux ``sched_setaffinity(0, ...)`` called in a thread changes only that thread, and a
child process or thread inherits the affinity of the thread that created it. Both facts are what
this module relies on. A thread is moved through libc's own call, which ``ctypes`` makes with the
interpreter lock released: moving the calling thread to another core waits until that core runs
it, and the runner's other threads need not wait with it (benchmarks/RESULTS.md).
"""

from __future__ import annotations

import ctypes
import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator
from collections.abc import Set as AbstractSet
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CorePlan:
    """``housekeeping`` is None (and ``job_cores`` empty) when nothing should be pinned."""

    housekeeping: int | None = None
    job_cores: frozenset[int] = frozenset()
    job_cgroup: Path | None = None
    """``cgroup.procs`` of the cpuset partition holding the job cores (``runner up --tune``):
    each job process is moved into it, and the partition, not affinity, places it."""

    @classmethod
    def detect(cls) -> CorePlan:
        """Split the cores this process may use; no pinning where affinity is unsupported."""
        if not hasattr(os, "sched_getaffinity"):
            return cls()
        allowed = os.sched_getaffinity(0)
        if len(allowed) <= 1:
            return cls()
        housekeeping = min(allowed)
        return cls(housekeeping=housekeeping, job_cores=frozenset(allowed - {housekeeping}))

    @property
    def pinned(self) -> bool:
        return self.housekeeping is not None

    def describe(self) -> str:
        if self.housekeeping is None:
            return "no core pinning (a single core is available)"
        jobs = ",".join(str(core) for core in sorted(self.job_cores))
        return f"runner threads on core {self.housekeeping}, jobs on cores {jobs}"

    def pin_to_housekeeping(self) -> None:
        """Pin the calling thread to the housekeeping core for the rest of its life."""
        if self.housekeeping is not None:
            _set_thread_affinity({self.housekeeping})

    @contextmanager
    def housekeeping_affinity(self) -> Iterator[None]:
        """The calling thread on the housekeeping core for the block, e.g. while a library
        starts its background threads (they inherit it)."""
        if self.housekeeping is None:
            yield
            return
        with _thread_affinity({self.housekeeping}):
            yield

    @contextmanager
    def job_affinity(self) -> Iterator[Callable[[], None]]:
        """The calling thread on the job cores for the block: wrap a job process's start in it
        so the child starts on the job cores (no window where it runs elsewhere). Yields
        ``leave``, which gives the thread its cores back before the block ends (once): the
        moment the child exists, so that the thread does not hold up the child's first steps
        on its core."""
        # The partition took the job cores from every other cgroup, the runner's included:
        # asking for them here would only fail.
        if not self.job_cores or self.job_cgroup is not None:
            yield _stay
            return
        previous = frozenset(os.sched_getaffinity(0))
        _set_thread_affinity(self.job_cores)
        left = False

        def leave() -> None:
            nonlocal left
            if not left:
                left = True
                _set_thread_affinity(previous)

        try:
            yield leave
        finally:
            leave()

    def admit(self, pid: int) -> None:
        """Move a just-started job process into the job cores' partition, if there is one."""
        if self.job_cgroup is None:
            return
        try:
            fd = os.open(self.job_cgroup, os.O_WRONLY | os.O_CLOEXEC)
            try:
                os.write(fd, str(pid).encode())
            finally:
                os.close(fd)
        except OSError as exc:
            log.warning("cannot move process %d into %s: %s", pid, self.job_cgroup, exc)


def _stay() -> None:
    pass


@contextmanager
def _thread_affinity(cores: AbstractSet[int]) -> Iterator[None]:
    previous = frozenset(os.sched_getaffinity(0))
    _set_thread_affinity(cores)
    try:
        yield
    finally:
        _set_thread_affinity(previous)


def _set_thread_affinity(cores: AbstractSet[int]) -> None:
    try:
        _setter()(cores)
    except OSError as exc:
        # A cpuset shrunk under us (container resize): run unpinned rather than not at all.
        log.warning("cannot pin thread to cores %s: %s", sorted(cores), exc)


_Setter = Callable[[AbstractSet[int]], None]
_setter_lock = threading.Lock()
_found_setter: _Setter | None = None


def _setter() -> _Setter:
    """How the calling thread is moved: libc's ``sched_setaffinity`` without the interpreter
    lock where there is one, else ``os.sched_setaffinity``."""
    global _found_setter
    if _found_setter is not None:  # on the way of every job start: no lock once found
        return _found_setter
    with _setter_lock:
        if _found_setter is None:
            _found_setter = _libc_setter() or _os_setter
        return _found_setter


def _os_setter(cores: AbstractSet[int]) -> None:
    os.sched_setaffinity(0, cores)


_WORD_BITS = 64
_MASKS_KEPT = 8


def _libc_setter() -> _Setter | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        function = ctypes.CDLL(None, use_errno=True).sched_setaffinity
    except (OSError, AttributeError):
        return None
    function.argtypes = (ctypes.c_int, ctypes.c_size_t, ctypes.c_void_p)
    function.restype = ctypes.c_int
    # A job start moves its thread to the job cores and back: the two masks are built once,
    # not per move (benchmarks/RESULTS.md, the runner's share of pickup). Never changed once
    # built, so threads share them without a lock.
    masks: dict[frozenset[int], ctypes.Array[ctypes.c_uint64]] = {}

    def set_affinity(cores: AbstractSet[int]) -> None:
        key = cores if isinstance(cores, frozenset) else frozenset(cores)
        words = masks.get(key)
        if words is None:
            words = (ctypes.c_uint64 * (max(key, default=0) // _WORD_BITS + 1))()
            for core in key:
                words[core // _WORD_BITS] |= 1 << (core % _WORD_BITS)
            if len(masks) < _MASKS_KEPT:
                masks[key] = words
        if function(0, ctypes.sizeof(words), ctypes.addressof(words)) != 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code))

    return set_affinity
