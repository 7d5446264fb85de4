"""Live logs: the running job's stdout and stderr to the server in sequenced ``log`` chunks.

One long-lived thread on the housekeeping core, like the heartbeat's, and attached to and
detached from the channel at the same moments (``running`` sent there; before a result; on a
lost channel), so a ``log`` never comes between a result and its reply. The server answers a
``log`` only to refuse it, with an ``error`` naming it (``reply_to``): the last ones, sent just
before the result, are refused after the result went out, and the outbox does not take that
for the result's refusal.

Each stream is decoded as UTF-8 (invalid bytes replaced) and counted in bytes of that text, so a
chunk's ``data`` advances the offset by exactly its encoded length and never splits a character.
Chunks are cut every ``interval`` or as soon as ``CHUNK_BYTES`` are waiting, at the last line end
when there is one; a line without its end goes out one interval later (a progress bar still
moves). The last ``RESEND_WINDOW`` bytes sent stay here: on a new channel they are sent again
from their start, and the server keeps what it already had. Unsent bytes beyond
``MAX_RETAINED`` (a channel down for long) are dropped from the front: the server records the
gap. The job's result keeps its whole output regardless: the live log is for watching.
"""

from __future__ import annotations

import codecs
import logging
import threading
import uuid
from typing import Literal

from benchrunner.core.clock import SystemThreadClock, ThreadClock
from benchrunner.protocol import MAX_LOG_CHUNK, Log
from benchrunner.runner.channel import ChannelClosedError
from benchrunner.runner.channel_thread import ChannelThread
from benchrunner.runner.cores import CorePlan
from benchrunner.runner.transport import Transport

log = logging.getLogger(__name__)

INTERVAL = 0.25
CHUNK_BYTES = MAX_LOG_CHUNK
RESEND_WINDOW = 256 * 1024
MAX_RETAINED = 4 * 1024 * 1024
_LINE_ENDS = (b"\n", b"\r")
Stream = Literal["stdout", "stderr"]
STREAMS: tuple[Stream, ...] = ("stdout", "stderr")


def _char_start(data: bytes | bytearray, cut: int) -> int:
    """``cut`` moved back to the start of the UTF-8 character it falls in."""
    while 0 < cut < len(data) and data[cut] & 0xC0 == 0x80:
        cut -= 1
    return cut


class StreamBuffer:
    """One stream of the job: its UTF-8 text from byte ``base`` to ``end``; sent up to ``sent``."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._data = bytearray()
        self.base = 0
        self.sent = 0
        self._held = -1  # where a line without its end was held back at the last cut

    @property
    def end(self) -> int:
        return self.base + len(self._data)

    @property
    def waiting(self) -> int:
        return self.end - self.sent

    def write(self, data: bytes, *, final: bool = False) -> None:
        self._data += self._decoder.decode(data, final).encode()
        excess = len(self._data) - MAX_RETAINED
        if excess > 0:
            self._drop(excess)

    def rewind(self) -> None:
        """Send everything still held again (a new channel)."""
        self.sent = self.base
        self._held = -1

    def take(self, *, final: bool) -> list[tuple[int, str]]:
        """The chunks to send now, as ``(offset, text)``; they count as sent."""
        unsent = self._data[self.sent - self.base :]
        cut = len(unsent)
        if not final and cut < CHUNK_BYTES:
            line_end = max(unsent.rfind(end) for end in _LINE_ENDS) + 1
            if line_end < cut and self._held != self.sent + line_end:
                self._held = self.sent + line_end  # the partial line waits one interval
                cut = line_end
        chunks = []
        start = 0
        while start < cut:
            stop = _char_start(unsent, min(cut, start + CHUNK_BYTES))
            chunks.append((self.sent + start, unsent[start:stop].decode()))
            start = stop
        self.sent += cut
        kept_from = self.sent - RESEND_WINDOW
        if kept_from > self.base:
            self._drop(kept_from - self.base)
        return chunks

    def _drop(self, count: int) -> None:
        count = _char_start(self._data, count)
        del self._data[:count]
        self.base += count
        self.sent = max(self.sent, self.base)


class LogStreamer(ChannelThread):
    def __init__(
        self, cores: CorePlan, interval: float = INTERVAL, clock: ThreadClock | None = None
    ) -> None:
        super().__init__("log-streamer", cores)
        self._interval = interval
        self._clock = clock or SystemThreadClock()
        self._send_lock = threading.Lock()  # held while sending: detach waits for it
        self._generation = 0
        self._job: uuid.UUID | None = None
        self._streams: dict[Stream, StreamBuffer] = {}

    def attach(self, channel: Transport) -> None:
        """Stream on ``channel``; on a channel new to this job, resend what is still held."""
        with self._cond:
            if self._channel is channel:
                return
            self._channel = channel
            if channel.generation != self._generation:
                self._generation = channel.generation
                for buffer in self._streams.values():
                    buffer.rewind()
            self._cond.notify_all()

    def detach(self) -> None:
        """Stop sending; returns after any send in progress has finished."""
        with self._cond:
            self._channel = None
        with self._send_lock:
            pass

    def begin(self, job: uuid.UUID) -> None:
        with self._cond:
            self._job = job
            self._streams = {stream: StreamBuffer() for stream in STREAMS}

    def write(self, job: uuid.UUID, stream: str, data: bytes) -> None:
        """Output of ``job`` (from the executor's reader threads); ignored once it finished."""
        with self._cond:
            buffer = self._streams.get(stream) if job == self._job else None  # type: ignore[call-overload]
            if buffer is None:
                return
            buffer.write(data)
            if buffer.waiting >= CHUNK_BYTES:
                self._cond.notify_all()

    def finish(self, job: uuid.UUID) -> None:
        """Send the rest of ``job``'s output (if attached) and forget it. The agent calls it
        before it sends the job's result, so every ``log`` precedes the result."""
        with self._cond:
            if self._job != job:
                return
            for buffer in self._streams.values():
                buffer.write(b"", final=True)
        self._flush(final=True)
        with self._cond:
            self._job = None
            self._streams = {}

    def _run(self) -> None:
        while True:
            with self._cond:
                if self._stopped:
                    return
                self._clock.wait(self._cond, self._clock.monotonic() + self._interval)
            self._flush(final=False)

    def _flush(self, *, final: bool) -> None:
        with self._send_lock:
            with self._cond:
                channel, job = self._channel, self._job
                if channel is None or job is None:
                    return
                messages = [
                    Log(job=job, stream=stream, offset=offset, data=text)
                    for stream, buffer in self._streams.items()
                    for offset, text in buffer.take(final=final)
                ]
            for message in messages:
                try:
                    channel.send(message)
                except ChannelClosedError:
                    log.debug("log not sent: channel closed")  # resent on the next channel
                    return
