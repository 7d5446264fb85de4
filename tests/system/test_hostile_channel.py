"""A hostile channel client against a real server process: malformed, binary, oversized, deeply
nested, invalid UTF-8, out-of-order and other runners' messages, floods of frames and of
connections. Every bad frame gets an ``error`` event, or a close with its documented code; the
server then still serves a normal runner, and its log holds no traceback.
"""

from __future__ import annotations

import collections
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from websockets.exceptions import InvalidStatus

from tests.harness import Deployment, RawChannel, deploy

MAX_BYTES = 256 * 1024
FLOOD = 2000

MALFORMED = [
    "",
    " ",
    "not json",
    "{",
    '{"event": "heartbeat"',
    '{"event": "heartbeat"}}',
    "[1]",
    "null",
    "42",
    '"heartbeat"',
    "{}",
    '{"event": null}',
    '{"event": 7}',
    '{"event": ["heartbeat"]}',
    '{"event": "dance"}',
    '{"event": "HEARTBEAT"}',
    '{"event": "ready", "poll_timeout": true}',
    '{"event": "ready", "poll_timeout": "30"}',
    '{"event": "ready", "poll_timeout": 1e999}',
    '{"event": "ready", "poll_timeout": 0}',
    '{"event": "ready", "poll_timeout": 123456789012345678901234567890}',
    '{"event": "ready", "os": {"nested": "object"}}',
    '{"event": "ready", "os": "' + "x" * 1000 + '"}',
    '{"event": "running", "job": "not-a-uuid"}',
    '{"event": "completed", "job": "00000000-0000-0000-0000-000000000000"}',
    '{"event": "completed", "job": "00000000-0000-0000-0000-000000000000", "results": {}}',
    '{"event": "completed", "job": "00000000-0000-0000-0000-000000000000", '
    '"results": [{"exit_code": "0"}]}',
    '{"event": "failed", "job": "00000000-0000-0000-0000-000000000000", "error": false}',
    '{"event": "ready", "poll_timeout": NaN}',
    '{"event": "heartbeat"} trailing',
    "\ufeff{}",
    '{"event": "heartbeat", "x": "\\ud800"}' + "{",
]


@dataclass
class Tally:
    frames: int = 0
    errors: int = 0
    closes: collections.Counter[int] = field(default_factory=collections.Counter)
    refused: int = 0

    def report(self) -> str:
        closes = ", ".join(f"{n} x {code}" for code, n in sorted(self.closes.items()))
        return (
            f"hostile channel: {self.frames} frames sent, {self.errors} errors answered, "
            f"closes: {closes}; {self.refused} handshakes refused (401)"
        )


@pytest.fixture
def deployment(tmp_path: Path, database_url: str) -> Iterator[Deployment]:
    with deploy(
        tmp_path, database_url, heartbeat_timeout=30.0, request_body_max_bytes=MAX_BYTES
    ) as deployment:
        yield deployment


class Hostile:
    """One hostile runner's connections, counting what is sent and what comes back."""

    def __init__(self, deployment: Deployment, tally: Tally) -> None:
        self.deployment = deployment
        self.tally = tally
        self.slug, self.key = deployment.new_runner("hostile")
        self.channel = self.connect()

    def connect(self) -> RawChannel:
        channel = RawChannel(self.deployment.server, self.slug, self.key)
        self.deployment.channels.append(channel)
        return channel

    def error(self, frame: str | bytes | dict[str, Any]) -> dict[str, Any]:
        """Send a frame that must be answered with ``error``, the channel staying open."""
        if isinstance(frame, bytes):
            self.channel.ws.send(frame)
        else:
            self.channel.send(frame)
        self.tally.frames += 1
        reply = self.channel.recv()
        assert reply["event"] == "error", (str(frame)[:80], reply)
        self.tally.errors += 1
        return reply

    def closed_with(self, frame: str | bytes, code: int, *, text: bool = True) -> None:
        """Send a frame that must close the connection with ``code``; connect again."""
        self.channel.ws.send(frame, text=text)
        self.tally.frames += 1
        assert self.channel.wait_closed(timeout=15)[0] == code
        self.tally.closes[code] += 1
        self.channel = self.connect()


def test_a_hostile_client_gets_errors_and_closes_and_everyone_else_is_served(
    deployment: Deployment,
) -> None:
    tally = Tally()
    victim = deployment.channel("victim")
    victims_job = deployment.submit("bench.noop")
    assert victim.claim()["uuid"] == victims_job
    assert victim.ask({"event": "running"})["event"] == "ack"
    honest = deployment.runner_process("honest").start()
    deployment.wait_status(deployment.submit("bench.noop"), "processed")
    hostile = Hostile(deployment, tally)

    # Malformed, non-object, unknown events, wrong types: an error each, the channel stays.
    for frame in MALFORMED:
        hostile.error(frame)
    # Binary frames, whatever they hold.
    for binary in (b"\x00binary", b'{"event": "heartbeat"}', b"\xff" * 100):
        hostile.error(binary)
    # Deep nesting, in every shape.
    for depth in (201, 1_000, 10_000, 30_000):
        message = hostile.error('{"event": "heartbeat", "x": ' + "[" * depth + "]" * depth + "}")
        assert "nested deeper than 200 levels" in message["message"]
        hostile.error("[" * depth)
        hostile.error('{"a": ' * depth + "1" + "}" * depth)
    # Out of order: results, running and cancels for jobs never claimed by anyone.
    for _ in range(20):
        never = str(uuid.uuid4())
        hostile.error({"event": "completed", "job": never, "results": []})
        hostile.error({"event": "failed", "job": never, "results": [], "error": "x"})
        hostile.error({"event": "canceled", "job": never})
        hostile.error({"event": "running", "job": never})
    hostile.error({"event": "running"})  # nothing of its own in flight
    # Another runner's job: the hostile runner can neither finish, fail, cancel nor run it.
    stolen: list[dict[str, Any]] = [
        {"event": "completed", "job": victims_job, "results": [{"exit_code": 0}]},
        {"event": "failed", "job": victims_job, "results": [], "error": "stolen"},
        {"event": "canceled", "job": victims_job},
        {"event": "running", "job": victims_job},
    ]
    for message in stolen:
        for _ in range(10):
            hostile.error(message)
    assert deployment.status(victims_job) == "running"
    # A second ready while one is outstanding.
    hostile.channel.send({"event": "ready", "poll_timeout": 900})
    tally.frames += 1
    hostile.error({"event": "ready", "poll_timeout": 900})
    # A flood of frames sent without reading a reply, then every reply read.
    for _ in range(FLOOD):
        hostile.channel.send("not json")
    tally.frames += FLOOD
    replies = [hostile.channel.recv() for _ in range(FLOOD)]
    assert all(r["event"] == "error" for r in replies)
    tally.errors += FLOOD
    # Closes with documented codes: a text frame that is not UTF-8 (1007), an oversized one.
    for _ in range(5):
        hostile.closed_with(b'{"event": "heartbeat\xff\xfe"}', 1007)
        hostile.closed_with('{"event": "heartbeat", "x": "' + "x" * MAX_BYTES + '"}', 1009)
        hostile.closed_with(b"\x00" * (MAX_BYTES + 1), 1009, text=False)
    # A flood of connections with one key: each new one supersedes the one before.
    older = hostile.channel
    for _ in range(20):
        newer = hostile.connect()
        assert older.wait_closed(timeout=15) == (4001, "superseded")
        tally.closes[4001] += 1
        older = newer
    hostile.channel = older
    # Handshakes with a wrong key, no key, someone else's key.
    for token in ("bencher_runner_" + "0" * 64, "nonsense", hostile.key):
        with pytest.raises(InvalidStatus) as refused:
            RawChannel(deployment.server, "victim" if token == hostile.key else hostile.slug, token)
        assert refused.value.response.status_code == 401
        tally.refused += 1

    # Everyone else is still served: the victim finishes its job, the honest runner runs more.
    assert hostile.channel.ask({"event": "heartbeat"}) == {"event": "ack"}
    done = {"event": "completed", "job": victims_job, "results": [{"exit_code": 0}]}
    assert victim.ask(done) == {"event": "ack", "job": victims_job}
    last = [deployment.submit("bench.noop") for _ in range(3)]
    for job in [victims_job, *last]:
        deployment.wait_status(job, "processed", timeout=60)
    assert honest.proc is not None and honest.proc.poll() is None
    with deployment.admin() as client:
        assert client.health().status == "ok"
    log = deployment.server.log.read_text()
    assert "Traceback" not in log
    assert '"level": "error"' not in log
    print(tally.report())
    closing_frames = tally.closes[1007] + tally.closes[1009]
    outstanding_ready = 1
    assert tally.errors == tally.frames - closing_frames - outstanding_ready  # each one answered
