"""The runner sockets' WebSocket protocol (server/app/websocket_protocol.py): no per-message
deflate, a heartbeat answered in the protocol whatever the reads it arrives in, and keepalive
pings only to a connection that sent nothing since the last one was due.

An in-process server (its clock the test's; no pings but in the test of pings, whose frames the
client would write between a test's own): a running job's heartbeats are answered from memory,
which is when the protocol answers them itself.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from websockets.frames import Frame, Opcode

from benchrunner.server.app.websocket_protocol import LingeringCloseProtocol
from benchrunner.server.channel.runner_session import HEARTBEAT_TEXT
from tests.harness import wait_until
from tests.inprocess import InProcessChannel, InProcessServer, serve_in_process

PING_INTERVAL = 0.3


@pytest.fixture
def server(tmp_path: Path, database_url: str) -> Iterator[InProcessServer]:
    with serve_in_process(tmp_path, database_url) as running:
        yield running


def _running_job(server: InProcessServer, channel: InProcessChannel) -> str:
    """A running job of the channel's runner, remembered by the heartbeat ledger (its
    heartbeats answered from memory)."""
    job_uuid = server.submit()
    assert channel.claim()["uuid"] == job_uuid
    assert channel.ask({"event": "running"}) == {"event": "ack", "job": job_uuid}
    assert channel.ask(HEARTBEAT_TEXT) == {"event": "ack", "job": job_uuid}
    lifecycle = server.state("lifecycle")
    wait_until(lambda: len(lifecycle.heartbeats) == 1, message="the job remembered")
    return job_uuid


def _frame(text: str) -> bytes:
    """A client's text frame, masked, as it goes on the wire."""
    return Frame(Opcode.TEXT, text.encode()).serialize(mask=True, extensions=[])


def _protocol(server: InProcessServer, channel: InProcessChannel) -> LingeringCloseProtocol:
    """The server's side of the channel's connection."""
    local = channel.ws.socket.getsockname()
    for connection in server.uvicorn.server_state.connections:
        if isinstance(connection, LingeringCloseProtocol) and connection.client == local:
            return connection
    raise AssertionError(f"no connection from {local}")


@pytest.mark.engine_independent
def test_the_server_declines_per_message_deflate(server: InProcessServer) -> None:
    """The websockets client offers permessage-deflate (as Bencher's runner may): the server
    accepts the connection without it, and the runner's messages are answered uncompressed."""
    channel = server.channel("deflating")
    assert channel.ws.request is not None and channel.ws.response is not None
    assert "permessage-deflate" in channel.ws.request.headers["Sec-WebSocket-Extensions"]
    assert "Sec-WebSocket-Extensions" not in channel.ws.response.headers
    assert channel.ws.protocol.extensions == []
    job_uuid = _running_job(server, channel)
    assert channel.ask(HEARTBEAT_TEXT) == {"event": "ack", "job": job_uuid}


@pytest.mark.engine_independent
def test_a_heartbeat_is_answered_whatever_the_reads_it_arrives_in(server: InProcessServer) -> None:
    """Split over two writes, glued to the next frame, several in one write, after a message
    the server parses: each heartbeat gets its own ``ack``, in order."""
    channel = server.channel("ragged")
    job_uuid = _running_job(server, channel)
    ack = {"event": "ack", "job": job_uuid}
    wire = channel.ws.socket
    beat = _frame(HEARTBEAT_TEXT)
    wire.sendall(beat[:3])
    wire.sendall(beat[3:])
    assert channel.recv() == ack
    wire.sendall(beat + beat[:4])
    wire.sendall(beat[4:])
    assert [channel.recv(), channel.recv()] == [ack, ack]
    wire.sendall(beat * 3)
    assert [channel.recv() for _ in range(3)] == [ack] * 3
    wire.sendall(_frame('{"event": "dance"}') + beat)
    assert channel.recv()["event"] == "error"
    assert channel.recv() == ack
    for _ in range(20):  # one whole frame a read: answered in the protocol
        assert channel.ask(HEARTBEAT_TEXT) == ack
    assert channel.ask({"event": "completed", "job": job_uuid, "results": []}) == ack
    assert channel.ask(HEARTBEAT_TEXT) == {"event": "ack"}  # no job now: the session answers
    assert server.job(job_uuid).status in {"completed", "processed"}


@pytest.mark.engine_independent
def test_a_heartbeat_answered_in_the_protocol_keeps_the_job_alive(
    server: InProcessServer,
) -> None:
    """It moves the session's deadline as any sign of life does."""
    timeout = server.state("ctx").settings.heartbeat_timeout
    channel = server.channel("steady")
    job_uuid = _running_job(server, channel)
    for _ in range(3):
        server.clock.advance(timeout - 1)
        assert channel.ask(HEARTBEAT_TEXT) == {"event": "ack", "job": job_uuid}
    assert server.job(job_uuid).status == "running"
    server.clock.advance(timeout + 1)
    assert channel.wait_closed(timeout=15) == (1000, '"heartbeat_timeout"')
    assert server.job(job_uuid).status == "failed"


@pytest.mark.engine_independent
def test_only_a_silent_connection_is_pinged(tmp_path: Path, database_url: str) -> None:
    """A runner that heartbeats more often than the ping interval is never pinged; one that
    waits for a job in silence is, and answers."""
    with serve_in_process(tmp_path, database_url, ws_ping_interval=PING_INTERVAL) as server:
        busy = server.channel("busy")
        job_uuid = _running_job(server, busy)
        sent = [time.monotonic()]
        quiet = server.channel("quiet")
        quiet.send({"event": "ready", "poll_timeout": 60})
        quiet_side, busy_side = _protocol(server, quiet), _protocol(server, busy)
        started = time.monotonic()
        while quiet_side.last_ping_rtt == 0.0 or time.monotonic() - started < 4 * PING_INTERVAL:
            sent.append(time.monotonic())
            assert busy.ask(HEARTBEAT_TEXT) == {"event": "ack", "job": job_uuid}
            assert time.monotonic() - started < 30, "the quiet connection was never pinged"
        # A loaded machine can stall this thread or the server's loop for a whole interval,
        # leaving the busy connection as silent, and rightly pinged: a frame's arrival trails
        # its send by at most the next gap between sends, so gaps under half an interval
        # leave no interval without a frame.
        longest = max(later - earlier for earlier, later in itertools.pairwise(sent))
        assert busy_side.ping_sent_at == 0.0 or longest >= PING_INTERVAL / 2, longest
        assert quiet_side.ping_sent_at > 0.0
