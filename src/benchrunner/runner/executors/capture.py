"""Bounded capture of a child's output pipe in a background thread.

Both pipes of a child are read concurrently, each by its own StreamCapture, so a child that fills
one pipe while we wait on the other cannot deadlock. Only the first ``limit`` bytes are kept; the
rest is read and discarded so the child never blocks on a full pipe. Every chunk read, kept or
not, also goes to ``on_data`` when one is given: the job's live log (``runner/log_stream.py``).
"""

from __future__ import annotations

import os
import subprocess
import threading
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
        self._on_data = on_data
        self._stream = stream
        self._limit = limit
        self._chunks: list[bytes] = []
        self._kept = 0
        self._truncated = False
        self._thread = threading.Thread(target=self._read, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def join(self, timeout: float | None = None) -> bool:
        """True once the pipe reached EOF (every writer closed it)."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def text(self) -> str:
        return bounded_text(b"".join(self._chunks), self._limit, truncated=self._truncated)

    def _read(self) -> None:
        try:
            while chunk := os.read(self._fd, _CHUNK):
                if self._on_data is not None:
                    self._on_data(chunk)
                room = self._limit - self._kept
                if room <= 0:
                    self._truncated = True
                    continue
                if len(chunk) > room:
                    chunk, self._truncated = chunk[:room], True
                self._chunks.append(chunk)
                self._kept += len(chunk)
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


def _sink_for(sink: OutputSink, stream: str) -> Callable[[bytes], None]:
    return lambda data: sink(stream, data)
