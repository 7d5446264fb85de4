"""Bounded capture of a child's output pipes.

Both pipes of a child are read concurrently, so a child that fills one pipe while we wait on the
other cannot deadlock: by ``PipeReader`` on the calling thread, which polls both pipes and the
child's exit together (Linux ``pidfd_open``), or, where that is missing, by a ``StreamCapture``
thread per pipe. Two threads started per iteration cost the runner more CPU than a short job's
reading itself. Only the first ``limit`` bytes are kept;
the rest is read and discarded so the child never blocks on a full pipe. Every chunk read, kept
or not, also goes to ``on_data`` when one is given: the job's live log (``runner/log_stream.py``).
"""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import threading
import time
import uuid
from collections.abc import Callable
from typing import IO

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


class StreamCapture:
    """Reads ``stream`` to EOF on a daemon thread; ``text()`` once ``join()`` returned True."""

    def __init__(
        self,
        stream: IO[bytes],
        limit: int,
        name: str,
        on_data: Callable[[bytes], None] | None = None,
    ) -> None:
        self._fd = stream.fileno()
        self._stream = stream
        self._kept = _Kept(limit, on_data)
        self._thread = threading.Thread(target=self._read, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def join(self, timeout: float | None = None) -> bool:
        """True once the pipe reached EOF (every writer closed it)."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def text(self) -> str:
        return self._kept.text()

    def _read(self) -> None:
        try:
            while chunk := os.read(self._fd, _CHUNK):
                self._kept.add(chunk)
        finally:
            self._stream.close()


OutputSink = Callable[[str, bytes], None]
"""Receives ``(stream, data)`` for every chunk a job writes to ``"stdout"`` or ``"stderr"``."""


def capture_output(
    child: subprocess.Popen[bytes], limit: int, job: uuid.UUID, sink: OutputSink | None
) -> tuple[StreamCapture, StreamCapture]:
    """Start reading ``child``'s stdout and stderr, each also passed to ``sink`` as it comes."""
    assert child.stdout is not None and child.stderr is not None
    captures = []
    for pipe, stream in ((child.stdout, "stdout"), (child.stderr, "stderr")):
        on_data = None if sink is None else _sink_for(sink, stream)
        capture = StreamCapture(pipe, limit, f"job-{job}-{stream}", on_data)
        capture.start()
        captures.append(capture)
    return captures[0], captures[1]


class PipeReader:
    """``child``'s stdout and stderr read on the calling thread: ``until_exit`` reads both
    until the child exits (or closes both), ``pause`` reads on for a while (so a process left in
    its group never blocks on a full pipe while the group is stopped), ``finish`` reads what is
    left. ``open`` returns None where the child's exit cannot be polled for."""

    def __init__(
        self, child: subprocess.Popen[bytes], limit: int, sink: OutputSink | None, exit_fd: int
    ) -> None:
        assert child.stdout is not None and child.stderr is not None
        self._exit_fd: int | None = exit_fd
        self._poll = select.poll()
        self._poll.register(exit_fd, select.POLLIN)
        self._pipes: dict[int, tuple[str, IO[bytes]]] = {}
        self._kept: dict[str, _Kept] = {}
        for pipe, stream in ((child.stdout, "stdout"), (child.stderr, "stderr")):
            on_data = None if sink is None else _sink_for(sink, stream)
            self._kept[stream] = _Kept(limit, on_data)
            self._pipes[pipe.fileno()] = (stream, pipe)
            self._poll.register(pipe.fileno(), select.POLLIN)

    @classmethod
    def open(
        cls, child: subprocess.Popen[bytes], limit: int, sink: OutputSink | None
    ) -> PipeReader | None:
        pidfd_open = getattr(os, "pidfd_open", None)
        if pidfd_open is None:
            return None
        try:
            exit_fd = pidfd_open(child.pid)
        except OSError:  # a kernel before 5.3, or a seccomp filter refusing it
            return None
        return cls(child, limit, sink, exit_fd)

    def text(self, stream: str) -> str:
        return self._kept[stream].text()

    def until_exit(self) -> None:
        """Read until the child has exited or both pipes are closed."""
        while self._pipes and self._exit_fd is not None:
            self._read(self._poll.poll())
        self._close_exit_fd()

    def pause(self, seconds: float) -> None:
        """Read whatever comes for ``seconds``."""
        if not self._pipes:
            time.sleep(seconds)
            return
        deadline = time.monotonic() + seconds
        while self._pipes and (left := deadline - time.monotonic()) > 0:
            self._read(self._poll.poll(left * 1000))

    def finish(self, timeout: float) -> list[str]:
        """Read until both pipes are closed, for ``timeout`` seconds at most; the streams still
        held open then (they are no longer read)."""
        deadline = time.monotonic() + timeout
        while self._pipes and (left := deadline - time.monotonic()) > 0:
            self._read(self._poll.poll(left * 1000))
        open_streams = [stream for stream, _ in self._pipes.values()]
        for fd in list(self._pipes):
            self._close(fd)
        return open_streams

    def close(self) -> None:
        """Stop reading (after ``finish``, or on an error)."""
        for fd in list(self._pipes):
            self._close(fd)
        self._close_exit_fd()

    def _read(self, events: list[tuple[int, int]]) -> None:
        exited = False
        for fd, _ in events:
            if fd == self._exit_fd:
                exited = True
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
