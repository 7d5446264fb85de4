"""Bounded connections, over real sockets against a real server process.

A connection that does not send a whole request within ``--request-read-timeout`` (2 s here) is
closed, whether it stays silent or trickles; a slow request that keeps coming is answered; a
runner's channel outlives the deadline; and silent sockets beyond the process's file-descriptor
budget cannot keep the server from answering anyone else. What the HTTP parser refuses (an
over-long URL, a malformed request line) is answered in the API's JSON error shape.
"""

from __future__ import annotations

import contextlib
import json
import resource
import select
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.harness import Deployment, ServerProcess, deploy, wait_until

READ_TIMEOUT = 2.0
# Upper bound for the server to act on a 2 s deadline on a loaded 2-core machine.
ACT_WITHIN = 15.0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    tmp = tmp_path_factory.mktemp("connections")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("BENCHRUNNER_REQUEST_READ_TIMEOUT", str(READ_TIMEOUT))
        # A heartbeat timeout well above the test's length: the channel test keeps one idle.
        db = f"sqlite:///{tmp / 'benchrunner.db'}"
        with deploy(tmp, db, heartbeat_timeout=60) as deployment:
            yield deployment
    assert "Traceback" not in deployment.server.log.read_text()


def _connect(server: ServerProcess) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=ACT_WITHIN)


def _until_closed(sock: socket.socket, within: float = ACT_WITHIN) -> bytes:
    """Everything the server sends until it closes the connection; fails after ``within``."""
    received = b""
    deadline = time.monotonic() + within
    while (left := deadline - time.monotonic()) > 0:
        sock.settimeout(left)
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            break
        except ConnectionResetError:
            return received
        if not chunk:
            return received
        received += chunk
    raise AssertionError(f"connection still open after {within} s (received {received!r})")


def _send_slowly(sock: socket.socket, pieces: list[bytes], every: float) -> bytes | None:
    """Send ``pieces`` one by one, ``every`` seconds apart, watching the connection meanwhile.

    Returns None when all was sent with no word from the server before the last piece, else
    what the server sent before it closed the connection (the request was still incomplete).
    """
    for index, piece in enumerate(pieces):
        if index:
            readable, _, _ = select.select([sock], [], [], every)
            if readable:
                return _until_closed(sock)
        try:
            sock.sendall(piece)
        except (BrokenPipeError, ConnectionResetError):
            return b""
    return None


REQUEST = b"GET /v0/server/health HTTP/1.1\r\nHost: bench\r\nUser-Agent: trickle\r\n\r\n"


def test_a_silent_connection_is_answered_408_and_closed(server: Deployment) -> None:
    started = time.monotonic()
    with _connect(server.server) as sock:
        answer = _until_closed(sock)
    elapsed = time.monotonic() - started
    assert answer.startswith(b"HTTP/1.1 408 "), answer
    body = json.loads(answer.split(b"\r\n\r\n", 1)[1])
    assert body["error_code"] == "request_timeout" and "2 s" in body["message"]
    assert READ_TIMEOUT * 0.9 <= elapsed < ACT_WITHIN


def test_headers_trickled_a_byte_a_second_are_cut_off(server: Deployment) -> None:
    started = time.monotonic()
    with _connect(server.server) as sock:
        answer = _send_slowly(sock, [REQUEST[i : i + 1] for i in range(len(REQUEST))], every=1)
    assert answer is not None, "the whole request went through a byte a second"
    assert answer.startswith(b"HTTP/1.1 408 "), answer
    assert time.monotonic() - started < ACT_WITHIN


def test_a_body_trickled_a_byte_a_second_is_cut_off(server: Deployment) -> None:
    body = json.dumps({"project": "bench", "branch": "x" * 200}).encode()
    head = (
        b"POST /v0/run HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
        b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n"
    )
    started = time.monotonic()
    with _connect(server.server) as sock:
        sock.sendall(head)
        answer = _send_slowly(sock, [body[i : i + 1] for i in range(len(body))], every=1)
    assert answer is not None, "the whole body went through a byte a second"
    assert time.monotonic() - started < ACT_WITHIN
    _assert_request_timeout(answer)
    with server.admin() as client:
        assert client.health().status == "ok"


def _assert_request_timeout(answer: bytes) -> None:
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408 "), answer
    assert b"content-type: application/json" in head.lower()
    error = json.loads(body)
    assert error["error_code"] == "request_timeout" and "2 s" in error["message"], error


def test_a_body_that_stops_short_is_answered_408(server: Deployment) -> None:
    """Content-Length 100, ten bytes sent, then nothing: the handler waits for the rest."""
    started = time.monotonic()
    with _connect(server.server) as sock:
        sock.sendall(
            b"POST /v0/run HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
            b"Content-Length: 100\r\n\r\n" + b'{"project"'
        )
        answer = _until_closed(sock)
    assert READ_TIMEOUT * 0.9 <= time.monotonic() - started < ACT_WITHIN
    _assert_request_timeout(answer)


def test_a_slow_request_that_keeps_coming_is_answered(server: Deployment) -> None:
    """Headers in three pieces, then a 256 KiB body over about twice the read timeout."""
    body = json.dumps({"project": "bench", "branch": "x" * (256 * 1024)}).encode()
    head = (
        b"POST /v0/run HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
        b"Connection: close\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n"
    )
    thirds = [head[: len(head) // 3], head[len(head) // 3 : -10], head[-10:]]
    chunks = [body[i : i + 32 * 1024] for i in range(0, len(body), 32 * 1024)]
    started = time.monotonic()
    with _connect(server.server) as sock:
        assert _send_slowly(sock, thirds, every=0.3) is None
        assert _send_slowly(sock, chunks, every=0.5) is None
        answer = _until_closed(sock)
    assert time.monotonic() - started > READ_TIMEOUT  # the body alone outlasted the timeout
    status, _, rest = answer.partition(b"\r\n")
    assert status == b"HTTP/1.1 400 Bad Request", answer[:300]
    assert b"branch" in rest  # the handler read the whole body and validated it


def _ask_raw(server: ServerProcess, request: bytes) -> tuple[bytes, dict[str, str]]:
    """The status line and JSON body of the answer to ``request``, sent whole."""
    with _connect(server) as sock:
        sock.sendall(request)
        answer = _until_closed(sock)
    head, _, body = answer.partition(b"\r\n\r\n")
    status, _, headers = head.partition(b"\r\n")
    assert b"content-type: application/json" in headers.lower(), answer[:500]
    return status, json.loads(body)


@pytest.mark.parametrize("length", [60_000, 65_600, 70_000, 2_000_000])
def test_a_long_url_is_answered_in_json_whatever_its_length(
    server: Deployment, length: int
) -> None:
    target = b"/v0/projects/bench/perf?benchmarks=" + b"b" * length
    status, error = _ask_raw(
        server.server, b"GET " + target + b" HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n"
    )
    if len(target) <= 65535:  # the API reads it, and finds the query incomplete
        assert status == b"HTTP/1.1 400 Bad Request", error
        assert error["error_code"] == "bad_request" and "branches" in error["message"]
    else:
        assert status == b"HTTP/1.1 414 URI Too Long", error
        assert error["error_code"] == "uri_too_long" and "65535 bytes" in error["message"]
    assert error["request_id"]


def test_a_malformed_request_is_answered_in_json(server: Deployment) -> None:
    status, error = _ask_raw(server.server, b"GET /v0/server/health HTTP/1.1\r\nHost bench\r\n\r\n")
    assert status == b"HTTP/1.1 400 Bad Request"
    assert error["error_code"] == "bad_request" and error["message"] == "invalid HTTP request"


def test_a_runner_channel_outlives_the_read_timeout(server: Deployment) -> None:
    channel = server.channel("steady")
    with _connect(server.server) as later:  # opened after the channel: its deadline is later
        assert _until_closed(later).startswith(b"HTTP/1.1 408 ")
    assert channel.ask({"event": "ready", "poll_timeout": 1})["event"] == "no_job"


@contextlib.contextmanager
def _open_file_limit(soft: int) -> Iterator[None]:
    """Lower this process's soft limit on open files, for the children it starts meanwhile."""
    before = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, before[1]))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, before)


def test_silent_sockets_cannot_starve_the_server(tmp_path: Path) -> None:
    """With ``ulimit -n`` 160 (80 connections by default), 200 silent sockets are open, and
    the server still answers at once, long before any of them reaches its read deadline."""
    templates = tmp_path / "templates.toml"
    templates.write_text("")
    server = ServerProcess(tmp_path / "data", templates, f"sqlite:///{tmp_path / 'b.db'}")
    server.data_dir.mkdir()
    with pytest.MonkeyPatch.context() as env:
        env.setenv("BENCHRUNNER_REQUEST_READ_TIMEOUT", "120")
        with _open_file_limit(160):
            server.start()
    silent: list[socket.socket] = []
    try:
        for _ in range(200):
            silent.append(_connect(server))
        with httpx.Client(base_url=server.url, timeout=ACT_WITHIN) as client:
            for _ in range(5):
                assert client.get("/v0/server/health").json()["status"] == "ok"

        def evicted() -> int:
            readable, _, _ = select.select(silent, [], [], 0)
            return len(readable)

        # The longest-waiting sockets made room: at least 200 - 80 of them were closed.
        wait_until(lambda: evicted() >= 120, timeout=ACT_WITHIN, message="evictions")
    finally:
        for sock in silent:
            sock.close()
        server.kill()
    log = server.log.read_text()
    assert "Traceback" not in log
    assert log.count("80 connections open (--max-connections)") == 1  # one warning a minute
