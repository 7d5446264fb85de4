"""A job's leader started by ``posix_spawn``: the same child as ``subprocess.Popen`` would start
(``start_leader`` in ``group.py``), in fewer steps on the way of a job's start (benchmarks/
RESULTS.md, the runner's share of pickup).

glibc's ``posix_spawn`` is one ``clone`` sharing the runner's memory (as ``vfork``) and one
``exec``, with no Python run in between; the child gets:

- a new session and process group (``setsid``), the environment given and no other;
- stdin from ``/dev/null``, stdout and stderr piped to the runner;
- no other descriptor: Python opens its own non-inheritable (closed by the ``exec``), and every
  descriptor found inheritable in ``/proc/self/fd`` (e.g. one the runner itself inherited) is
  closed in the child. They are listed by ``survey_descriptors``, between jobs (listed on the
  way of each start, they cost it about 70 µs). A descriptor only becomes inheritable when
  made so on purpose, which the runner never does; one made so after the last survey would
  reach the child, and one listed and closed since is only closed again in the child, in vain;
- SIGPIPE and SIGXFSZ, which Python ignores, back to their defaults, and no signal blocked;
- the calling thread's CPU affinity, and its working directory (below).

``posix_spawn`` has no working directory of its own to set (glibc's ``addchdir_np`` is not in
Python 3.11), so the calling thread's is used: the thread first stops sharing its filesystem
attributes (working directory, root, umask) with the rest of the runner (``unshare(CLONE_FS)``,
once per thread), changes into the job's directory for the spawn and back after. Such a thread
no longer follows a change of the process's working directory or umask, which the runner never
makes. Where the thread cannot unshare them (a seccomp filter refusing ``unshare``), on the main
thread (which never unshares them), or where glibc has no ``setsid`` for ``posix_spawn``,
``spawn_leader`` returns None and the caller uses ``Popen``.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, Protocol

_CLONE_FS = 0x200
_RESTORED_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGPIPE", "SIGXFSZ") if hasattr(signal, name)
)


class Leader(Protocol):
    """What the runner uses of a started leader: ``subprocess.Popen`` or ``SpawnedLeader``."""

    @property
    def pid(self) -> int: ...

    @property
    def stdout(self) -> IO[bytes] | None: ...

    @property
    def stderr(self) -> IO[bytes] | None: ...

    def poll(self) -> int | None: ...

    def wait(self) -> int: ...

    def kill(self) -> None: ...


class SpawnedLeader:
    """A child started by ``spawn_leader``, waited for as ``Popen`` waits: ``wait`` from one
    thread, ``poll`` and ``kill`` from any (``poll`` says None while another thread waits).
    The exit code is negative for a signal, as ``Popen``'s."""

    def __init__(self, pid: int, stdout: IO[bytes], stderr: IO[bytes]) -> None:
        self.pid = pid
        self.stdout: IO[bytes] | None = stdout
        self.stderr: IO[bytes] | None = stderr
        self.returncode: int | None = None
        self._lock = threading.Lock()

    def poll(self) -> int | None:
        if self.returncode is not None or not self._lock.acquire(blocking=False):
            return self.returncode
        try:
            if self.returncode is None:
                self._reaped(os.WNOHANG)
        finally:
            self._lock.release()
        return self.returncode

    def wait(self) -> int:
        with self._lock:
            if self.returncode is None:
                self._reaped(0)
            assert self.returncode is not None
            return self.returncode

    def kill(self) -> None:
        # Never a signal to a reaped pid: it may be another process's by now.
        if self.poll() is None:
            with suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)

    def _reaped(self, options: int) -> None:
        try:
            pid, status = os.waitpid(self.pid, options)
        except ChildProcessError:  # reaped elsewhere: its status is lost, as Popen has it
            self.returncode = 0
            return
        if pid == self.pid:
            self.returncode = os.waitstatus_to_exitcode(status)


def spawn_leader(
    command: Sequence[str],
    env: Mapping[str, str],
    cwd: Path | None,
    started: Callable[[], None] | None = None,
) -> SpawnedLeader | None:
    """``command`` started as described above, in ``cwd`` (None: the runner's); ``started``
    is called the moment the child exists, before anything else is done. None where this
    thread or host cannot (see above): nothing was started. Raises OSError when it cannot be
    started, as ``Popen`` does (``FileNotFoundError`` for a program not found)."""
    if not _spawns or (cwd is not None and not _detached()):
        return None
    stdin = _devnull()
    opened: list[int] = []
    try:
        out_read, out_write = (_above_stdio(fd) for fd in os.pipe())
        opened += (out_read, out_write)
        err_read, err_write = (_above_stdio(fd) for fd in os.pipe())
        opened += (err_read, err_write)
        actions: list[tuple[int, ...]] = [
            (os.POSIX_SPAWN_DUP2, stdin, 0),
            (os.POSIX_SPAWN_DUP2, out_write, 1),
            (os.POSIX_SPAWN_DUP2, err_write, 2),
        ]
        inheritable = _inheritable if _inheritable is not None else _inheritable_descriptors()
        # After the dup2s: a listed number reused by one of the pipes is already copied.
        actions += [(os.POSIX_SPAWN_CLOSE, fd) for fd in inheritable]
        with _working_directory(cwd):
            pid = os.posix_spawn(
                _program(command[0], env),
                list(command),
                env,
                file_actions=actions,
                setsid=True,
                setsigdef=_RESTORED_SIGNALS,
                setsigmask=(),
            )
            if started is not None:
                started()
    except NotImplementedError:  # refused before starting anything: glibc has no setsid here
        _unsupported()
        for fd in opened:
            os.close(fd)
        return None
    except BaseException:
        for fd in opened:
            os.close(fd)
        raise
    for fd in (out_write, err_write):
        os.close(fd)
    return SpawnedLeader(pid, os.fdopen(out_read, "rb"), os.fdopen(err_read, "rb"))


_spawns = sys.platform.startswith("linux") and hasattr(os, "posix_spawn")


def _unsupported() -> None:
    global _spawns
    _spawns = False


_thread = threading.local()


def _detached() -> bool:
    """Whether the calling thread has its own working directory (unsharing it now if not
    tried yet). Never the main thread: a ``chdir`` there (a library's, a test's) would then
    move it alone, where every thread expects to follow it."""
    if threading.current_thread() is threading.main_thread():
        return False
    detached: bool | None = getattr(_thread, "detached", None)
    if detached is None:
        detached = _thread.detached = _unshare_fs()
    return detached


def _unshare_fs() -> bool:
    try:
        unshare = ctypes.CDLL(None, use_errno=True).unshare
        return bool(unshare(_CLONE_FS) == 0)
    except (OSError, AttributeError):
        return False


@contextmanager
def _working_directory(cwd: Path | None) -> Iterator[None]:
    """The calling (detached) thread in ``cwd`` for the block, then back where it was."""
    if cwd is None:
        yield
        return
    here = os.open(".", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.chdir(cwd)
        try:
            yield
        finally:
            os.fchdir(here)
    finally:
        os.close(here)


def _program(name: str, env: Mapping[str, str]) -> str:
    """The file ``exec`` runs for ``name``: looked up in ``env``'s PATH, as ``Popen`` does,
    unless it holds a slash (relative to the working directory then). Raises
    FileNotFoundError, or PermissionError where only unexecutable files were found."""
    if "/" in name:
        return name
    refused = False
    for directory in os.get_exec_path(env):
        candidate = Path(directory, name)
        if candidate.is_file():
            if os.access(candidate, os.X_OK):
                return str(candidate)
            refused = True
    code = errno.EACCES if refused else errno.ENOENT
    raise (PermissionError if refused else FileNotFoundError)(code, os.strerror(code), name)


_inheritable: list[int] | None = None
_devnull_lock = threading.Lock()
_devnull_fd: int | None = None


def survey_descriptors() -> None:
    """List the descriptors the next spawns close in the child (see above). Call it between
    jobs, and once before the first; without it each spawn lists them itself."""
    global _inheritable
    _inheritable = _inheritable_descriptors()


def _devnull() -> int:
    """``/dev/null`` for the children's stdin, opened once for the runner's life."""
    global _devnull_fd
    with _devnull_lock:
        if _devnull_fd is None:
            _devnull_fd = _above_stdio(os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC))
        return _devnull_fd


def _inheritable_descriptors() -> list[int]:
    found = []
    with os.scandir("/proc/self/fd") as entries:
        listed = [int(entry.name) for entry in entries]
    for fd in listed:
        if fd > 2:
            with suppress(OSError):  # the listing's own descriptor, closed by now
                if os.get_inheritable(fd):
                    found.append(fd)
    return found


def _above_stdio(fd: int) -> int:
    """``fd``, moved above 2 if it is one of them (a runner started with one closed): the
    child's dup2 onto 0, 1 and 2 must not overwrite a source before it is copied."""
    if fd > 2:
        return fd
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    os.close(fd)
    return moved
