"""benchmarks/delay_proxy: chunks held in order, each from its own arrival, and a relay that
keeps every byte and the end of the stream. No timing is asserted: the clock is injected."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator

from benchmarks.delay_proxy import HeldStream, fine_loop, start_proxy


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@contextlib.contextmanager
def idle_loop() -> Iterator[asyncio.AbstractEventLoop]:
    """A loop that is never run: timers are armed on it, and the tests call ``release``."""
    loop = asyncio.new_event_loop()
    try:
        yield loop
    finally:
        loop.close()


def test_each_chunk_is_held_from_its_own_arrival_and_released_in_order() -> None:
    clock, written = Clock(), list[bytes]()
    with idle_loop() as loop:
        stream = HeldStream(loop, 1.0, written.append, clock, spin=0.0)
        stream.push(b"a")
        clock.now = 0.4
        stream.push(b"b")  # arrives while "a" is held: held alongside, not after it
        clock.now = 0.999
        stream.release()
        assert written == []
        clock.now = 1.0
        stream.release()
        assert written == [b"a"]
        assert stream.timer is not None  # armed for "b"
        clock.now = 1.4
        stream.release()
        assert written == [b"a", b"b"]
        assert stream.timer is None and stream.pending() == 0


def test_chunks_due_together_go_out_together_in_arrival_order() -> None:
    clock, written = Clock(), list[bytes]()
    with idle_loop() as loop:
        stream = HeldStream(loop, 0.5, written.append, clock, spin=0.0)
        for chunk in (b"1", b"2", b"3"):
            stream.push(chunk)
        clock.now = 0.5
        stream.release()
        assert written == [b"1", b"2", b"3"]


def test_no_delay_writes_at_once() -> None:
    clock, written = Clock(), list[bytes]()
    with idle_loop() as loop:
        stream = HeldStream(loop, 0.0, written.append, clock)
        stream.push(b"x")
        assert written == [b"x"] and stream.timer is None


def test_the_proxy_relays_every_byte_both_ways_and_the_end_of_the_stream() -> None:
    async def scenario() -> tuple[bytes, bytes]:
        received = bytearray()

        async def upstream_side(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            data = await reader.read()  # to the client's end of stream
            received.extend(data)
            writer.write(data[::-1])
            await writer.drain()
            writer.close()

        upstream = await asyncio.start_server(upstream_side, "127.0.0.1", 0)
        port = upstream.sockets[0].getsockname()[1]
        proxy = await start_proxy(0.002, upstream=("127.0.0.1", port))
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", proxy.sockets[0].getsockname()[1]
        )
        sent = bytes(range(256)) * 400  # many chunks
        for start in range(0, len(sent), 1000):
            writer.write(sent[start : start + 1000])
        await writer.drain()
        writer.write_eof()
        answer = await asyncio.wait_for(reader.read(), 30)
        writer.close()
        proxy.close()
        upstream.close()
        assert bytes(received) == sent
        return answer, sent[::-1]

    loop = fine_loop()
    try:
        answer, expected = loop.run_until_complete(scenario())
    finally:
        loop.close()
    assert answer == expected
