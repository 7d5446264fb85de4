"""A job process and everything it spawned, as one process group that can be stopped whole.

The leader is started by ``start_leader`` in a new session, so its pid is also the group id and
every descendant that does not call ``setsid``/``setpgid`` itself stays in the group. Stopping
means SIGTERM to the group, then SIGKILL after a grace period, then waiting until the kernel
reports the group empty.

The runner's death: while the runner's guard process runs (``runner/guard.py``), the guard
stops the whole group, leader included, the moment the runner ends, from the job's in-flight
record (``runner/inflight.py``); the leader is then started *guarded*: one ``vfork`` and one
``exec`` of the job's program, nothing in between, the fastest start there is. Without a live
guard (it could not start, or it died) the leader is *armed* instead with a parent-death signal
(Linux ``PR_SET_PDEATHSIG``, SIGKILL), so it dies with the runner even when nothing of the runner
can act any more. It is armed by util-linux ``setpriv`` run as a shim in the child (it sets the
signal, then executes the job's program in the same process; a second ``exec``, about a
millisecond), or, where ``setpriv`` is missing, by Python code in a forked child (slower: see
``start_leader``). Either way the leader is armed before the job's program runs. The one
difference: the forked child also exits at once if the runner died before the signal was armed;
through the shim such a child, started in the instant of the runner's death, is left to the
guard and the next start, which find it by the job's ``BENCHRUNNER_JOB``, as they find any
descendant (and so is a guarded leader caught between ``vfork`` and ``exec``).

The signal fires when the *thread* that forked the leader ends, not only the process: the
leader is forked by the job's thread, which outlives it (it waits for the leader and stops the
group before it returns), so it fires only once the iteration is over or the
runner died. It reaches the leader only: the rest of the group is stopped by the runner's guard
process, or at the runner's next start, from the in-flight record.

Orphans: when the leader dies first, its children are re-parented. The runner makes itself a
*child subreaper* (Linux ``PR_SET_CHILD_SUBREAPER``) so they are re-parented to the runner, which
reaps them; otherwise they would sit as zombies under an init that may never reap them (as in
some containers and microVMs), and the group would never look empty.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from benchrunner.core.clock import SystemThreadClock, ThreadClock
from benchrunner.runner.clock_timer import ClockTimer
from benchrunner.runner.executors.spawn import Leader, spawn_leader

log = logging.getLogger(__name__)

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_POLL_INTERVAL = 0.01
_KILL_WAIT = 5.0

_subreaper_lock = threading.Lock()
_subreaper: bool | None = None


def become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux only; once per process).

    Returns False where unsupported; stopping a group then still works, but orphaned zombies
    can make ``stop()`` wait out its timeouts.
    """
    global _subreaper
    with _subreaper_lock:
        if _subreaper is None:
            _subreaper = _set_child_subreaper()
        return _subreaper


def _set_child_subreaper() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    except (OSError, AttributeError) as exc:
        log.warning("cannot become child subreaper (orphaned job processes may linger): %s", exc)
        return False
    return True


class _Default:
    pass


_DEFAULT = _Default()


def start_leader(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path | None = None,
    shim: Sequence[str] | _Default | None = _DEFAULT,
    guarded: bool = False,
    started: Callable[[], None] | None = None,
) -> Leader:
    """``argv`` started as the leader of a new session and process group, to be killed when the
    runner dies; no stdin, stdout and stderr piped, no other descriptor inherited (started by
    ``spawn``: none found inheritable at the last ``survey_descriptors``). Raises
    OSError if it cannot be started (``argv[0]`` not found or not executable included).

    ``guarded``: the runner's guard is running and the job is recorded in flight, so the guard
    kills the leader with its group; it is started unarmed, by ``vfork`` and one ``exec``.
    Otherwise it is armed with the parent-death signal: through ``shim`` (default:
    ``parent_death_shim()``), a program that sets the signal and then executes ``argv`` in the
    same process, so the child is still started with ``vfork`` (no Python runs in it); without
    one, by code run in the child between ``fork`` and ``exec``, which is several milliseconds
    slower in a process of the runner's size (the whole interpreter is forked and its pages
    copied as it runs). The unarmed start and the shim's use ``posix_spawn`` where they can
    (``spawn.py``), else ``Popen``.

    ``started`` is called once the child exists, before the runner's ends of its pipes are set
    up where it can (``spawn_leader``): e.g. to move the calling thread off the child's core.
    It must not raise: the child would be left running, watched by nothing.
    """
    if guarded:
        return _start(argv, env, cwd, started)
    shim = parent_death_shim() if isinstance(shim, _Default) else shim
    if shim is None:
        return _popen(argv, env, cwd, started, preexec_fn=_die_with(os.getpid()))
    # The shim reports a missing program only through its exit code: refuse here as Popen does.
    _check_executable(argv[0], env.get("PATH", os.defpath), cwd)
    return _start([*shim, *argv], env, cwd, started)


def _start(
    command: Sequence[str],
    env: Mapping[str, str],
    cwd: Path | None,
    started: Callable[[], None] | None,
) -> Leader:
    return spawn_leader(command, env, cwd, started) or _popen(command, env, cwd, started)


def _popen(
    command: Sequence[str],
    env: Mapping[str, str],
    cwd: Path | None,
    started: Callable[[], None] | None,
    preexec_fn: Callable[[], None] | None = None,
) -> subprocess.Popen[bytes]:
    leader = subprocess.Popen(
        list(command),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=dict(env),
        start_new_session=True,
        close_fds=True,
        preexec_fn=preexec_fn,
    )
    if started is not None:
        started()
    return leader


SETPRIV_DIRECTORIES = ("/usr/bin", "/bin", "/usr/sbin", "/sbin")
_shim_lock = threading.Lock()
_shim: tuple[str, ...] | _Default | None = _DEFAULT


def parent_death_shim() -> tuple[str, ...] | None:
    """util-linux ``setpriv --pdeathsig KILL --`` where it is installed (2.33 or later, looked
    up once per process in the system directories only), else None."""
    global _shim
    with _shim_lock:
        if isinstance(_shim, _Default):
            _shim = _find_setpriv()
        return _shim


def _find_setpriv() -> tuple[str, ...] | None:
    if not sys.platform.startswith("linux"):
        return None
    setpriv = shutil.which("setpriv", path=os.pathsep.join(SETPRIV_DIRECTORIES))
    if setpriv is None:
        return None
    try:
        probe = subprocess.run(
            [setpriv, "--pdeathsig", "KILL", "--", "true"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if probe.returncode != 0:  # too old to know --pdeathsig, or not allowed to run
        log.info("%s cannot set a parent-death signal; job processes start slower", setpriv)
        return None
    return (setpriv, "--pdeathsig", "KILL", "--")


def _check_executable(program: str, path: str, cwd: Path | None) -> None:
    """Raise OSError (ENOENT, EACCES) where ``execvp(program)`` with ``path`` would fail."""
    if "/" in program:
        candidate = Path(program) if cwd is None else cwd / program
        if not candidate.exists():
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)
        if candidate.is_dir() or not os.access(candidate, os.X_OK):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), program)
        return
    if shutil.which(program, path=path) is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)


def _die_with(runner: int) -> Callable[[], None] | None:
    """The code run in the child between fork and exec: arm the parent-death signal, and die
    at once if the runner already died before it was armed. None where unsupported.

    Runs in a child forked from a threaded process: it only calls a C function loaded before
    the fork and never takes a lock that another thread might have held.
    """
    prctl = _prctl()
    if prctl is None:
        return None

    kill = int(signal.SIGKILL)

    def arm() -> None:
        prctl(_PR_SET_PDEATHSIG, kill, 0, 0, 0)
        if os.getppid() != runner:
            os._exit(1)

    return arm


_libc_lock = threading.Lock()
_libc_prctl: Callable[..., int] | None = None


def _prctl() -> Callable[..., int] | None:
    global _libc_prctl
    if not sys.platform.startswith("linux"):
        return None
    with _libc_lock:
        if _libc_prctl is None:
            _libc_prctl = ctypes.CDLL(None, use_errno=True).prctl
        return _libc_prctl


class ProcessGroup:
    """The group led by ``leader``. ``terminate``/``kill`` may be called from any thread;
    ``stop`` only by the thread that waited for the leader."""

    def __init__(
        self,
        leader: Leader,
        kill_grace: float,
        clock: ThreadClock | None = None,
    ) -> None:
        """``clock``: the runner's, on which the kill grace runs out."""
        self.leader = leader
        self.pgid = leader.pid
        self._kill_grace = kill_grace
        self._clock = clock or SystemThreadClock()
        self._lock = threading.Lock()
        self._kill_timer: ClockTimer | None = None
        self._closed = False

    def terminate(self) -> None:
        """SIGTERM the group now and SIGKILL it after the kill grace unless it is gone by then.

        Does not block; calling it again does not restart the grace period.
        """
        with self._lock:
            if self._closed:
                return
            if self._kill_timer is None:
                self._kill_timer = ClockTimer(
                    self._clock,
                    self._clock.monotonic() + self._kill_grace,
                    self.kill,
                    name=f"kill-grace-{self.pgid}",
                )
                self._kill_timer.start()
        self._signal(signal.SIGTERM)

    def kill(self) -> None:
        with self._lock:
            if self._closed:
                return
        self._signal(signal.SIGKILL)

    def stop(self, pause: Callable[[float], None] = time.sleep) -> bool:
        """After the leader was waited for: end every process still in the group (SIGTERM,
        SIGKILL after the kill grace) and return once it is empty. False if it would not empty
        within the grace plus a few seconds (a process stuck in the kernel). ``pause(seconds)``
        passes the time between looks (e.g. reading the group's output meanwhile)."""
        try:
            if self._empty():
                return True
            self.terminate()
            if self._wait_empty(self._kill_grace, pause):
                return True
            self._signal(signal.SIGKILL)
            if self._wait_empty(_KILL_WAIT, pause):
                return True
            log.error("process group %d did not end after SIGKILL", self.pgid)
            return False
        finally:
            self._close()

    def _close(self) -> None:
        with self._lock:
            self._closed = True
            timer, self._kill_timer = self._kill_timer, None
        if timer is not None:
            timer.stop()

    def _signal(self, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pgid, sig)

    def _empty(self) -> bool:
        self._reap()
        try:
            os.killpg(self.pgid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            # Someone else's process now carries this group id: ours is gone.
            return True
        return False

    def _wait_empty(self, timeout: float, pause: Callable[[float], None]) -> bool:
        # The kernel offers no notification for "this group is now empty"; poll briefly.
        deadline = self._clock.monotonic() + timeout
        while not self._empty():
            if self._clock.monotonic() >= deadline:
                return False
            pause(_POLL_INTERVAL)
        return True

    def _reap(self) -> None:
        # Only after the leader's wait(): waitpid(-pgid) would otherwise steal its status.
        while True:
            try:
                pid, _ = os.waitpid(-self.pgid, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
