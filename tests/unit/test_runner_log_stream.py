"""The runner's live log: chunks cut at line ends and character boundaries, offsets in bytes of
the UTF-8 text sent, at most 64 KiB each, resent from the retained window on a new channel."""

from __future__ import annotations

import uuid

from pydantic import BaseModel

from benchrunner.protocol import MAX_LOG_CHUNK, Log
from benchrunner.runner.cores import CorePlan
from benchrunner.runner.log_stream import MAX_RETAINED, RESEND_WINDOW, LogStreamer, StreamBuffer


def joined(chunks: list[tuple[int, str]], start: int = 0) -> str:
    text = ""
    for offset, data in chunks:
        assert offset == start + len(text.encode()), "chunks must be contiguous"
        text += data
    return text


def test_a_chunk_ends_at_a_line_end_and_a_partial_line_follows_one_interval_later() -> None:
    buffer = StreamBuffer()
    buffer.write(b"one\ntwo\nthr")
    assert buffer.take(final=False) == [(0, "one\ntwo\n")]
    assert buffer.take(final=False) == [(8, "thr")]  # waited one interval: sent as it is
    buffer.write(b"ee\r50%")
    assert buffer.take(final=False) == [(11, "ee\r")]
    assert buffer.take(final=True) == [(14, "50%")]


def test_characters_split_between_reads_are_sent_whole_and_invalid_bytes_replaced() -> None:
    buffer = StreamBuffer()
    buffer.write(b"ok \xe2\x9c")
    buffer.write(b"\x93 \xff\n")
    assert buffer.take(final=False) == [(0, "ok ✓ \ufffd\n")]
    assert buffer.end == len("ok ✓ \ufffd\n".encode())


def test_a_long_line_goes_out_in_chunks_of_at_most_64_kib_on_character_boundaries() -> None:
    buffer = StreamBuffer()
    text = "é" * 100_000  # 200,000 bytes, no line end
    buffer.write(text.encode())
    chunks = buffer.take(final=False)
    assert all(len(data.encode()) <= MAX_LOG_CHUNK for _, data in chunks)
    assert joined(chunks) == text


def test_a_new_channel_gets_the_retained_window_again() -> None:
    buffer = StreamBuffer()
    data = b"".join(b"line %06d\n" % i for i in range(40_000))  # 480,000 bytes
    buffer.write(data)
    joined(buffer.take(final=False))
    assert buffer.base == len(data) - RESEND_WINDOW
    buffer.rewind()
    resent = buffer.take(final=True)
    assert resent[0][0] == len(data) - RESEND_WINDOW
    assert joined(resent, resent[0][0]).encode() == data[-RESEND_WINDOW:]


def test_unsent_output_beyond_the_retained_maximum_is_dropped_from_the_front() -> None:
    buffer = StreamBuffer()
    data = b"x" * (MAX_RETAINED + 1000) + b"\n"
    buffer.write(data)
    chunks = buffer.take(final=False)
    assert chunks[0][0] == len(data) - MAX_RETAINED  # the server records the bytes before it
    assert joined(chunks, chunks[0][0]).encode() == data[-MAX_RETAINED:]


class Recorder:
    """Stands in for the channel: what the streamer sends, in order."""

    def __init__(self, generation: int) -> None:
        self.generation = generation
        self.sent: list[BaseModel] = []

    def send(self, message: BaseModel, *, expect_ack: bool = False) -> None:
        assert not expect_ack, "the server does not reply to a log"
        self.sent.append(message)


def test_the_streamer_sends_a_jobs_output_by_stream_and_stops_at_its_end() -> None:
    streamer = LogStreamer(CorePlan(), interval=3600)  # flushes only when told to
    job, other = uuid.uuid4(), uuid.uuid4()
    channel = Recorder(generation=1)
    streamer.begin(job)
    streamer.write(job, "stdout", b"hello\n")
    streamer.write(job, "stderr", b"warning\n")
    streamer.write(other, "stdout", b"not this job's\n")
    streamer.attach(channel)  # type: ignore[arg-type]
    streamer.write(job, "stdout", b"bye")
    streamer.finish(job)
    streamer.write(job, "stdout", b"after the end\n")
    streamer.finish(job)
    sent = [(m.stream, m.offset, m.data) for m in channel.sent if isinstance(m, Log)]
    assert sent == [("stdout", 0, "hello\nbye"), ("stderr", 0, "warning\n")]


def test_a_detached_streamer_sends_nothing_and_a_new_channel_gets_the_rest() -> None:
    streamer = LogStreamer(CorePlan(), interval=3600)
    job = uuid.uuid4()
    first, second = Recorder(generation=1), Recorder(generation=2)
    streamer.begin(job)
    streamer.attach(first)  # type: ignore[arg-type]
    streamer.write(job, "stdout", b"a\n")
    streamer._flush(final=False)
    streamer.detach()
    streamer.write(job, "stdout", b"b\n")
    streamer._flush(final=False)
    streamer.attach(second)  # type: ignore[arg-type]
    streamer.finish(job)
    assert [(m.offset, m.data) for m in first.sent if isinstance(m, Log)] == [(0, "a\n")]
    # the new channel gets what the old one may have lost, then the rest
    assert [(m.offset, m.data) for m in second.sent if isinstance(m, Log)] == [(0, "a\nb\n")]
