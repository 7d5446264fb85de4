"""The runner's protocol deadlines (heartbeats, reconnects) are kept on the clock it is given,
so a test moves time instead of waiting for it. The server at the other end is a real
WebSocket server on a local port."""

from __future__ import annotations

import queue
import random
import threading
from collections.abc import Callable, Iterator
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from websockets.http11 import Request, Response
from websockets.sync.server import Server, ServerConnection, serve

from benchrunner.protocol import NoJob, Ready
from benchrunner.runner.agent import Agent
from benchrunner.runner.channel import Channel
from benchrunner.runner.cores import CorePlan
from benchrunner.runner.events import AgentEvent, ServerEvent
from benchrunner.runner.heartbeat import HeartbeatSender
from benchrunner.runner.options import RunnerOptions
from benchrunner.runner.per_job import PerJobTransport
from tests.harness import wait_until
from tests.thread_clock import ManualThreadClock

KEY = "bencher_runner_" + "ab" * 32

Refusal = Callable[[ServerConnection, Request], Response | None]


@pytest.fixture
def server_port() -> Iterator[Callable[..., int]]:
    """Starts a WebSocket server on a free local port (``handler`` gets each connection,
    ``process_request`` may answer the handshake instead); the port."""
    servers: list[tuple[Server, threading.Thread]] = []

    def start(
        handler: Callable[[ServerConnection], None], process_request: Refusal | None = None
    ) -> int:
        server = serve(handler, "127.0.0.1", 0, process_request=process_request)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        servers.append((server, thread))
        return int(server.socket.getsockname()[1])

    yield start
    for server, thread in servers:
        server.shutdown()
        thread.join(10)


def test_heartbeats_fall_due_on_the_runners_clock(server_port: Callable[..., int]) -> None:
    received: queue.SimpleQueue[str] = queue.SimpleQueue()

    def record(connection: ServerConnection) -> None:
        for message in connection:
            received.put(str(message))

    port = server_port(record)
    clock = ManualThreadClock(start=1000.0)
    events: queue.SimpleQueue[AgentEvent] = queue.SimpleQueue()
    channel = Channel.open(
        f"ws://127.0.0.1:{port}/v0/runners/r1/channel",
        KEY,
        generation=1,
        events=events,
        cores=CorePlan(),
        user_agent="test",
    )
    sender = HeartbeatSender(60.0, CorePlan(), clock)
    sender.start()
    try:
        sender.attach(channel)
        wait_until(lambda: clock.waiting() == [1060.0], message="the first beat's wait")
        assert received.empty()  # it waits for the clock, and the clock has not moved
        clock.advance(60.0)
        assert '"heartbeat"' in received.get(timeout=10)
        wait_until(lambda: clock.waiting() == [1120.0], message="the second beat's wait")
        assert received.empty()
    finally:
        sender.stop()
        channel.close()


def test_the_agent_reconnects_when_its_clock_says(
    server_port: Callable[..., int], tmp_path: Path
) -> None:
    """The server is restarting (503 at the handshake): the next attempt waits for the backoff
    on the agent's clock, however much real time passes."""
    attempts: list[str] = []

    def restarting(connection: ServerConnection, request: Request) -> Response:
        attempts.append(request.path)
        return connection.respond(HTTPStatus.SERVICE_UNAVAILABLE, "restarting\n")

    port = server_port(lambda _connection: None, restarting)
    clock = ManualThreadClock(start=1000.0)
    options = RunnerOptions(
        host=f"http://127.0.0.1:{port}",
        runner="r1",
        key=KEY,
        templates=None,
        spool=tmp_path / "spool",
        noise_guard=False,
    )
    agent = Agent(options, clock=clock, rng=random.Random(7))
    exit_codes: list[int] = []
    thread = threading.Thread(target=lambda: exit_codes.append(agent.run()), daemon=True)
    thread.start()
    try:
        # Other threads (the live log's, the heartbeat's) wait on the clock too, longer.
        retry_at = wait_until(
            lambda: [at for at in clock.waiting() if at < 1000.1],
            message="the agent waiting its first backoff (under 0.1 s) to reconnect",
        )[0]
        assert attempts == ["/v0/runners/r1/channel"]
        assert retry_at >= 1000.0
        clock.advance(retry_at - clock.monotonic())
        wait_until(lambda: len(attempts) == 2, message="the second attempt")
    finally:
        agent.request_drain()
        thread.join(30)
    assert exit_codes == [0]


class _Busy(BaseHTTPRequestHandler):
    """Refuses every claim for now: ``429`` with ``Retry-After: 30``."""

    claims: queue.SimpleQueue[str]

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.claims.put(self.path)
        self.send_response(HTTPStatus.TOO_MANY_REQUESTS)
        self.send_header("Retry-After", "30")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def busy_server() -> Iterator[tuple[str, queue.SimpleQueue[str]]]:
    """An HTTP server on a free local port that answers each claim ``429``; its URL and the
    paths claimed."""
    claims: queue.SimpleQueue[str] = queue.SimpleQueue()
    handler = type("Busy", (_Busy,), {"claims": claims})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", claims
    server.shutdown()
    server.server_close()
    thread.join(10)


def per_job_transport(
    host: str, clock: ManualThreadClock
) -> tuple[PerJobTransport, queue.SimpleQueue[AgentEvent]]:
    events: queue.SimpleQueue[AgentEvent] = queue.SimpleQueue()
    transport = PerJobTransport(
        host,
        "r1",
        KEY,
        generation=1,
        events=events,
        cores=CorePlan(),
        user_agent="test",
        clock=clock,
    )
    return transport, events


def test_a_claim_refused_for_now_waits_its_retry_after_on_the_runners_clock(
    busy_server: tuple[str, queue.SimpleQueue[str]],
) -> None:
    host, claims = busy_server
    clock = ManualThreadClock(start=1000.0)
    transport, events = per_job_transport(host, clock)
    try:
        transport.send(Ready(poll_timeout=5))
        assert claims.get(timeout=10) == "/v0/runners/r1/jobs"
        wait_until(lambda: clock.waiting() == [1030.0], message="the claim's pause")
        clock.advance(29.0)
        wait_until(lambda: clock.waiting() == [1030.0], message="the claim still pausing")
        assert events.empty()  # no answer to the ready before the server's Retry-After
        clock.advance(1.0)
        assert events.get(timeout=10) == ServerEvent(1, NoJob())
        assert clock.waiting() == []
    finally:
        transport.close()


def test_closing_the_per_job_transport_ends_a_claims_pause(
    busy_server: tuple[str, queue.SimpleQueue[str]],
) -> None:
    host, claims = busy_server
    clock = ManualThreadClock(start=1000.0)
    transport, events = per_job_transport(host, clock)
    transport.send(Ready(poll_timeout=5))
    claims.get(timeout=10)
    wait_until(lambda: clock.waiting() == [1030.0], message="the claim's pause")
    transport.close()
    wait_until(lambda: clock.waiting() == [], message="the pause ended by the close")
    assert events.empty()  # a closed transport answers nothing
