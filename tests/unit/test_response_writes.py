"""How a response reaches the socket through the server's HTTP protocol (``app.connections``):
its head and body in one write; a streamed response's head at the end of the turn, ahead of a
body that comes later; ``100 Continue`` at once. The protocol is the server's own, driven by
raw request bytes; only the socket is replaced, by a transport that records its writes."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from uvicorn.config import Config
from uvicorn.server import ServerState

from benchrunner.server.app.connections import ConnectionLimits, protocol_class

LIMITS = ConnectionLimits(read_timeout=30.0, body_min_rate=1000, max_connections=100)


class RecordingTransport(asyncio.Transport):
    """A socket's stand-in: keeps each write apart."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.writes.append(bytes(data))

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": ("127.0.0.1", 8000), "peername": ("127.0.0.1", 40000)}.get(
            name, default
        )

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def _connected(app: Any) -> tuple[asyncio.Protocol, RecordingTransport]:
    """A new connection of the server's HTTP protocol serving ``app``, on the running loop."""
    config = Config(app=app, log_config=None, access_log=False, lifespan="off")
    config.load()
    protocol = protocol_class(LIMITS)(config, ServerState(), {}, asyncio.get_running_loop())
    transport = RecordingTransport()
    protocol.connection_made(transport)
    return protocol, transport


async def _turns(count: int) -> None:
    """Let the loop run ``count`` turns (the app's task starts, sends, the turn ends)."""
    for _ in range(count):
        await asyncio.sleep(0)


GET = b"GET /x HTTP/1.1\r\nhost: t\r\n\r\n"


def test_a_response_head_and_body_go_out_in_one_write() -> None:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send(
            {"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"5")]}
        )
        await send({"type": "http.response.body", "body": b"hello"})

    async def scenario() -> RecordingTransport:
        protocol, transport = _connected(app)
        protocol.data_received(GET)
        await _turns(5)
        protocol.connection_lost(None)
        return transport

    transport = asyncio.run(scenario())
    assert len(transport.writes) == 1
    head, body = transport.writes[0].split(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK\r\n") and b"\r\ncontent-length: 5" in head
    assert body == b"hello"


def test_a_streamed_response_head_leaves_before_its_body() -> None:
    writes_before_body: list[bytes] = []

    async def scenario() -> RecordingTransport:
        release = asyncio.Event()

        async def app(scope: Any, receive: Any, send: Any) -> None:
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await release.wait()
            writes_before_body.extend(transport.writes)
            await send({"type": "http.response.body", "body": b"late"})

        protocol, transport = _connected(app)
        protocol.data_received(GET)
        await _turns(5)
        release.set()
        await _turns(5)
        protocol.connection_lost(None)
        return transport

    transport = asyncio.run(scenario())
    assert len(writes_before_body) == 1
    assert writes_before_body[0].startswith(b"HTTP/1.1 200 OK\r\n")
    assert writes_before_body[0].endswith(b"\r\n\r\n")
    assert transport.writes[1:] == [b"4\r\nlate\r\n", b"0\r\n\r\n"] or transport.writes[1:] == [
        b"4\r\nlate\r\n0\r\n\r\n"
    ]


@pytest.mark.parametrize("keep_alive", [True, False])
def test_100_continue_leaves_at_once_and_the_answer_in_one_write(keep_alive: bool) -> None:
    bodies: list[bytes] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        message = await receive()
        bodies.append(message["body"])
        await send(
            {"type": "http.response.start", "status": 201, "headers": [(b"content-length", b"2")]}
        )
        await send({"type": "http.response.body", "body": b"ok"})

    connection = b"" if keep_alive else b"connection: close\r\n"
    request = (
        b"POST /x HTTP/1.1\r\nhost: t\r\ncontent-length: 3\r\nexpect: 100-continue\r\n"
        + connection
        + b"\r\n"
    )

    async def scenario() -> RecordingTransport:
        protocol, transport = _connected(app)
        protocol.data_received(request)
        await _turns(5)  # the app waits for the body: the 100 Continue is written
        assert transport.writes == [b"HTTP/1.1 100 Continue\r\n\r\n"]
        protocol.data_received(b"abc")
        await _turns(5)
        closed.append(transport.closed)
        protocol.connection_lost(None)
        return transport

    closed: list[bool] = []
    transport = asyncio.run(scenario())
    assert bodies == [b"abc"]
    assert closed == [not keep_alive]
    assert len(transport.writes) == 2
    assert transport.writes[1].startswith(b"HTTP/1.1 201 Created\r\n")
    assert transport.writes[1].endswith(b"\r\n\r\nok")
