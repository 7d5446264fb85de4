"""A TCP proxy that holds every chunk a fixed time in each direction: a network's round trip
for a database on the same host.

Stands in for ``tc qdisc add ... netem delay``, which this machine's kernel lacks ("Specified
qdisc kind is unknown", and no modules to load). Like netem's delay it holds each chunk of bytes
``delay`` seconds from when it arrived, in order, with no throughput limit: chunks that arrive
while earlier ones are held are held alongside them, not after them, so a burst costs one delay
and not one per chunk. Unlike netem it works per chunk that ``recv`` returns rather than per
packet, its timer is the event loop's (``select`` with microsecond timeouts, the kernel's
timer slack set to 1 ns, the last ``SPIN`` waited out polling the clock), and relaying costs a
user-space hop of its own: measure the proxy at ``--delay-ms 0`` beside a direct connection
(``--measure``) to read a figure taken through it fairly.

    .venv/bin/python -m benchmarks.delay_proxy --listen 15432 --delay-ms 0.5
    .venv/bin/python -m benchmarks.delay_proxy --measure [--rounds 2000]

``--delay-ms`` is one way: 0.5 gives a 1 ms round trip. ``--measure`` starts proxies at 0 and
0.5 ms each way (processes of their own) and prints the round trip of ``SELECT 1`` to PostgreSQL
directly and through each.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import ctypes
import os
import selectors
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

UPSTREAM = ("127.0.0.1", 5432)
PR_SET_TIMERSLACK = 29
"""``prctl`` option: the timer slack of this thread, 50 µs by default, added to each wait."""


SPIN = 50e-6
"""Seconds before a chunk is due that its timer fires, the rest spent polling the clock: a
woken timer runs late by about that much on this VM, even with no timer slack."""


class HeldStream:
    """Bytes bound for one transport, each chunk released ``delay`` seconds after it arrived,
    in arrival order. One timer at a time: the one for the oldest held chunk."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        delay: float,
        write: Callable[[bytes], None],
        clock: Callable[[], float],
        spin: float = SPIN,
    ) -> None:
        self.loop = loop
        self.delay = delay
        self.write = write
        self.clock = clock
        self.spin = spin
        self.held: collections.deque[tuple[float, bytes]] = collections.deque()
        self.timer: asyncio.TimerHandle | None = None

    def push(self, data: bytes) -> None:
        if self.delay <= 0 and not self.held:
            self.write(data)
            return
        self.held.append((self.clock() + self.delay, data))
        if self.timer is None:
            self._arm()

    def release(self) -> None:
        """Write every chunk that is due within ``spin`` (waiting out that bit), in order, then
        wait for the next."""
        self.timer = None
        while self.held:
            due = self.held[0][0]
            if due - self.clock() > self.spin:
                break
            while self.clock() < due:
                pass
            self.write(self.held.popleft()[1])
        if self.held:
            self._arm()

    def _arm(self) -> None:
        self.timer = self.loop.call_at(self.held[0][0] - self.spin, self.release)

    def pending(self) -> int:
        return len(self.held)


class _Side(asyncio.Protocol):
    """One end of a relayed connection; what it receives goes, held, to ``peer``."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.transport: asyncio.Transport | None = None
        self.peer: _Side | None = None
        self.outgoing: HeldStream | None = None
        self.closing = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        # no Nagle delay of our own: netem adds only the configured one
        transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def link(self, peer: _Side) -> None:
        self.peer = peer
        assert peer.transport is not None
        loop = asyncio.get_running_loop()
        self.outgoing = HeldStream(loop, self.delay, peer.transport.write, loop.time)

    def data_received(self, data: bytes) -> None:
        assert self.outgoing is not None
        self.outgoing.push(data)

    def eof_received(self) -> bool | None:
        self._after_held(self._shut_peer)
        return True  # keep our write side open until the peer closes

    def connection_lost(self, exc: Exception | None) -> None:
        self._after_held(self._close_peer)

    def pause_writing(self) -> None:  # our transport is full: stop reading from the peer
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.resume_reading()

    def _after_held(self, then: Callable[[], None]) -> None:
        """Run ``then`` once the chunks already received have been released, so an end of
        stream never overtakes the data before it."""
        held = self.outgoing
        if held is None or not held.pending():
            then()
            return
        asyncio.get_running_loop().call_at(held.held[-1][0], lambda: self._after_held(then))

    def _shut_peer(self) -> None:
        peer = self.peer
        if peer is not None and peer.transport is not None and peer.transport.can_write_eof():
            peer.transport.write_eof()

    def _close_peer(self) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.close()


async def start_proxy(
    delay: float, port: int = 0, upstream: tuple[str, int] = UPSTREAM
) -> asyncio.Server:
    """A proxy on 127.0.0.1:``port`` (0: any free port) to ``upstream``, holding each chunk
    ``delay`` seconds each way. The caller's loop must time finer than a millisecond (see
    ``fine_loop``)."""
    loop = asyncio.get_running_loop()

    def client_protocol() -> _Side:
        return _Client(delay, upstream)

    return await loop.create_server(client_protocol, "127.0.0.1", port)


class _Client(_Side):
    """The side a client connects to; it opens the upstream side, holding the client's bytes
    (unread, in the kernel) until that connection is up."""

    def __init__(self, delay: float, upstream: tuple[str, int]) -> None:
        super().__init__(delay)
        self.upstream = upstream

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        assert isinstance(transport, asyncio.Transport)
        transport.pause_reading()
        asyncio.get_running_loop().create_task(self._connect())

    async def _connect(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            _, server = await loop.create_connection(lambda: _Side(self.delay), *self.upstream)
        except OSError:
            assert self.transport is not None
            self.transport.close()
            return
        server.link(self)
        self.link(server)
        assert self.transport is not None
        self.transport.resume_reading()


def fine_loop() -> asyncio.AbstractEventLoop:
    """An event loop whose timers fire to the microsecond: the default selector (epoll) rounds
    every wait up to a whole millisecond, which would turn a 0.5 ms hold into 1 ms."""
    return asyncio.SelectorEventLoop(selectors.SelectSelector())


@contextlib.contextmanager
def proxy_process(round_trip_ms: float, upstream_port: int = UPSTREAM[1]) -> Iterator[int]:
    """This module as a process of its own, adding ``round_trip_ms`` (half of it each way) to
    127.0.0.1:``upstream_port``; yields the port it listens on. A process of its own, so that the
    relaying never waits for the interpreter lock of the process measuring through it."""
    proxy = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "benchmarks.delay_proxy",
            "--delay-ms",
            str(round_trip_ms / 2),
            "--upstream-port",
            str(upstream_port),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proxy.stdout is not None
        yield int(proxy.stdout.readline())
    finally:
        proxy.terminate()
        proxy.wait(10)


def measure(rounds: int) -> None:
    import psycopg

    def round_trips(port: int) -> list[float]:
        with psycopg.connect(host="127.0.0.1", port=port, user="postgres", dbname="postgres") as c:
            for _ in range(50):
                c.execute("SELECT 1")
            times = []
            for _ in range(rounds):
                before = time.perf_counter()
                c.execute("SELECT 1")
                times.append((time.perf_counter() - before) * 1000)
            return times

    with proxy_process(0.0) as zero, proxy_process(1.0) as one:
        labels = {"direct": UPSTREAM[1], "proxy at 0 ms": zero, "proxy at 1 ms round trip": one}
        figures: dict[str, list[float]] = {label: [] for label in labels}
        for _ in range(3):  # alternate, so load that comes and goes falls on all three
            for label, port in labels.items():
                figures[label].append(statistics.median(round_trips(port)))
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"SELECT 1 round trip, medians of 3 x {rounds} (ms), load {load}:")
    direct = statistics.median(figures["direct"])
    for label, runs in figures.items():
        value = statistics.median(runs)
        print(f"  {label:>22}: {value:.3f}  (+{value - direct:.3f} over direct)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--listen", type=int, default=0, help="port on 127.0.0.1 (0: any)")
    parser.add_argument("--delay-ms", type=float, default=0.5, help="hold each way, ms")
    parser.add_argument("--upstream-port", type=int, default=UPSTREAM[1])
    parser.add_argument("--measure", action="store_true", help="print the proxy's own cost")
    parser.add_argument("--rounds", type=int, default=2000)
    options = parser.parse_args()
    if options.measure:
        measure(options.rounds)
        return
    with contextlib.suppress(OSError, AttributeError):  # Linux: timers that fire on time
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0)
    loop = fine_loop()
    server = loop.run_until_complete(
        start_proxy(options.delay_ms / 1000, options.listen, ("127.0.0.1", options.upstream_port))
    )
    print(server.sockets[0].getsockname()[1], flush=True)  # the port, for whoever started us
    loop.add_signal_handler(signal.SIGTERM, loop.stop)
    loop.run_forever()


if __name__ == "__main__":
    main()
