"""Bounded capture of a child's output pipes.

Both pipes of a child are read concurrently, so a child that fills one pipe while we wait on the
other cannot deadlock: by ``PipeReader`` on the calling thread, which polls both pipes and the
child's exit together (``pidfd_open``: Linux 5.3 or later, checked at the runner's start by
``require_pidfd``); a thread per pipe would cost the runner more CPU than a short job's reading
itself. Only the first ``limit`` bytes are kept;
the rest is read and discarded so the child never blocks on a full pipe. Every chunk read, kept
or not, also goes to ``on_data`` when one is given: the job's live log (``runner/log_stream.py``).
"""

from __future__ import annotations

import contextlib
import os
import select
import threading
from collections.abc import Callable
from typing import IO

from benchrunner.core.clock import ThreadClock
from benchrunner.runner.clock_timer import ClockAlarm, pause
from benchrunner.runner.executors.base import ExecutorError
from benchrunner.runner.executors.spawn import Leader

_CHUNK = 65536


def truncation_marker(limit: int) -> str:
    return f"[benchrunner: output truncated at {limit} bytes]"


def bounded_text(data: bytes, limit: int, *, truncated: bool = False) -> str:
    """UTF-8 text of at most ``limit`` bytes of ``data`` (invalid bytes replaced), ending with a
    marker line when anything was cut."""
    if len(data) > limit:
        data, truncated = data[:limit], True
    text = data.decode("utf-8", errors="replace")
    if not truncated:
        return text
    if text and not text.endswith("\n"):
        text += "\n"
    return text + truncation_marker(limit) + "\n"


def with_notes(stderr: str, notes: list[str]) -> str:
    """The iteration's stderr followed by the runner's own notes, one per line."""
    if not notes:
        return stderr
    if stderr and not stderr.endswith("\n"):
        stderr += "\n"
    return stderr + "".join(f"{note}\n" for note in notes)


class _Kept:
    """What one stream kept: its first ``limit`` bytes, and whether more came."""

    def __init__(self, limit: int, on_data: Callable[[bytes], None] | None) -> None:
        self._limit = limit
        self._on_data = on_data
        self._chunks: list[bytes] = []
        self._kept = 0
        self._truncated = False

    def add(self, chunk: bytes) -> None:
        if self._on_data is not None:
            self._on_data(chunk)
        room = self._limit - self._kept
        if room <= 0:
            self._truncated = True
            return
        if len(chunk) > room:
            chunk, self._truncated = chunk[:room], True
        self._chunks.append(chunk)
        self._kept += len(chunk)

    def text(self) -> str:
        return bounded_text(b"".join(self._chunks), self._limit, truncated=self._truncated)


OutputSink = Callable[[str, bytes], None]
"""Receives ``(stream, data)`` for every chunk a job writes to ``"stdout"`` or ``"stderr"``."""


def close_pipes(child: Leader) -> None:
    """Close the parent's ends of ``child``'s stdout and stderr, once nothing reads them."""
    for pipe in (child.stdout, child.stderr):
        if pipe is not None:
            pipe.close()


def require_pidfd() -> None:
    """Raise ExecutorError in one line unless this host can watch a child's exit through a
    file descriptor (``os.pidfd_open``: Linux 5.3 or later, not refused by a seccomp filter),
    which ``PipeReader`` polls together with the child's pipes."""
    try:
        os.close(os.pidfd_open(os.getpid()))
    except (AttributeError, OSError) as exc:
        reason = "not in this Python" if isinstance(exc, AttributeError) else str(exc)
        raise ExecutorError(
            f"the runner needs Linux 5.3 or later: os.pidfd_open is unusable here ({reason})"
        ) from None


class PipeReader:
    """``child``'s stdout and stderr read on the calling thread, polled together with the
    child's exit (``os.pidfd_open``): ``until_exit`` reads both until the child exits (or
    closes both), ``pause`` reads on for a while (so a process left in its group never blocks
    on a full pipe while the group is stopped), ``finish`` reads what is left. The while and
    the at most are on the runner's ``clock``: a ``ClockAlarm`` of the reader's own (its
    thread started only when a wait outlasts what is ready) wakes the poll at the deadline.

    Raises OSError when the child's exit cannot be watched (``require_pidfd`` says why at the
    runner's start)."""

    def __init__(
        self,
        child: Leader,
        limit: int,
        sink: OutputSink | None,
        clock: ThreadClock,
    ) -> None:
        assert child.stdout is not None and child.stderr is not None
        self._clock = clock
        self._exit_fd: int | None = os.pidfd_open(child.pid)
        self._wake_lock = threading.Lock()
        try:
            self._wake_fd: int | None = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        except OSError:
            os.close(self._exit_fd)
            raise
        self._alarm = ClockAlarm(clock, name=f"output-deadline-{child.pid}")
        self._poll = select.poll()
        self._poll.register(self._exit_fd, select.POLLIN)
        self._poll.register(self._wake_fd, select.POLLIN)
        self._pipes: dict[int, tuple[str, IO[bytes]]] = {}
        self._kept: dict[str, _Kept] = {}
        for pipe, stream in ((child.stdout, "stdout"), (child.stderr, "stderr")):
            on_data = None if sink is None else _sink_for(sink, stream)
            self._kept[stream] = _Kept(limit, on_data)
            self._pipes[pipe.fileno()] = (stream, pipe)
            self._poll.register(pipe.fileno(), select.POLLIN)

    def text(self, stream: str) -> str:
        return self._kept[stream].text()

    def until_exit(self) -> None:
        """Read until the child has exited or both pipes are closed."""
        while self._pipes and self._exit_fd is not None:
            self._read(self._poll.poll())
        self._close_exit_fd()

    def pause(self, seconds: float) -> None:
        """Read whatever comes until the runner's clock has moved on by ``seconds``."""
        if not self._pipes:
            pause(self._clock, seconds)
            return
        self._read_until(self._clock.monotonic() + seconds)

    def finish(self, timeout: float) -> list[str]:
        """Read until both pipes are closed, for ``timeout`` seconds of the runner's clock at
        most; the streams still held open then (they are no longer read)."""
        self._read_until(self._clock.monotonic() + timeout)
        open_streams = [stream for stream, _ in self._pipes.values()]
        for fd in list(self._pipes):
            self._close(fd)
        return open_streams

    def close(self) -> None:
        """Stop reading (after ``finish``, or on an error)."""
        for fd in list(self._pipes):
            self._close(fd)
        self._close_exit_fd()
        self._alarm.close()
        with self._wake_lock:
            wake_fd, self._wake_fd = self._wake_fd, None
        if wake_fd is not None:
            os.close(wake_fd)

    def _read_until(self, deadline: float) -> None:
        """Read until both pipes are closed or the clock reaches ``deadline``: what is ready
        now, then, with a pipe still open, with the alarm set to wake the poll at ``deadline``
        (most iterations' pipes are at their end by then: no alarm)."""
        while self._pipes and (ready := self._poll.poll(0)):
            self._read(ready)
        if not self._pipes or self._clock.monotonic() >= deadline:
            return
        self._alarm.arm(deadline, self._wake)
        try:
            while self._pipes and self._clock.monotonic() < deadline:
                self._read(self._poll.poll())
        finally:
            self._alarm.disarm()

    def _wake(self) -> None:
        with self._wake_lock:
            if self._wake_fd is not None:
                os.eventfd_write(self._wake_fd, 1)

    def _read(self, events: list[tuple[int, int]]) -> None:
        exited = False
        for fd, _ in events:
            if fd == self._exit_fd:
                exited = True
                continue
            if fd == self._wake_fd:
                with contextlib.suppress(BlockingIOError):
                    os.eventfd_read(fd)
                continue
            entry = self._pipes.get(fd)
            if entry is None:
                continue
            chunk = os.read(fd, _CHUNK)
            if chunk:
                self._kept[entry[0]].add(chunk)
            else:
                self._close(fd)
        if exited:
            self._close_exit_fd()

    def _close(self, fd: int) -> None:
        _, pipe = self._pipes.pop(fd)
        with contextlib.suppress(KeyError):
            self._poll.unregister(fd)
        pipe.close()

    def _close_exit_fd(self) -> None:
        if self._exit_fd is not None:
            with contextlib.suppress(KeyError):
                self._poll.unregister(self._exit_fd)
            os.close(self._exit_fd)
            self._exit_fd = None


def _sink_for(sink: OutputSink, stream: str) -> Callable[[bytes], None]:
    return lambda data: sink(stream, data)
