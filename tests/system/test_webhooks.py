"""Webhooks over real HTTP on both engines: a project registers one, an alert raised by a direct
run is POSTed to a real HTTP receiver on loopback, signed; a receiver that fails gets retries
with backoff; a delivery pending when the server stops is sent by the next server on the
database; Slack's shape is Slack's; the secret shows only once.

The servers run in this process on a ``ManualClock``: the test moves time past each poll and
backoff instead of sleeping (docs/how-to/thresholds-alerts.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import hashlib
import hmac
import json
import logging
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchrunner.server.processing.webhooks import (
    EVENTS,
    UnsafeUrl,
    address_refused,
    backoff,
    check_url,
)
from tests.harness import cli, wait_until
from tests.http_serving import serving
from tests.inprocess import InProcessServer, serve_in_process

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
FAST: dict[str, Any] = {
    "webhook_allow_private": True,  # the receiver is on loopback
    "webhook_poll_interval": 1.0,
    "webhook_backoff": 1.0,
    "webhook_backoff_max": 4.0,
}
SECRET = "s3cr3t-webhook-signing-key-for-tests"


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    """A real HTTP server on loopback that records each POST and answers the next status of
    ``answers`` (the last one from then on)."""

    answers: list[int] = field(default_factory=lambda: [200])
    received: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    port: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def bodies(self) -> list[dict[str, Any]]:
        with self.lock:
            return [json.loads(r.body) for r in self.received]

    def count(self) -> int:
        with self.lock:
            return len(self.received)

    def first(self) -> Received | None:
        with self.lock:
            return self.received[0] if self.received else None


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with receiving() as found:
        yield found


@contextlib.contextmanager
def receiving() -> Iterator[Receiver]:
    """A ``Receiver`` listening until the block ends."""
    found = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(length)
            with found.lock:
                found.received.append(Received(dict(self.headers.items()), body))
                status = found.answers.pop(0) if len(found.answers) > 1 else found.answers[0]
            self.send_response(status)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    found.port = int(server.server_address[1])
    with serving(server, "webhook-receiver"):
        yield found


class Project:
    """Project ``bench`` of an in-process server, as its admin."""

    def __init__(self, server: InProcessServer) -> None:
        self.server = server
        self.http = httpx.Client(
            base_url=server.url, headers={"Authorization": f"Bearer {server.token}"}, timeout=30
        )
        self.minute = 0

    def close(self) -> None:
        self.http.close()

    def run(self, latency: float) -> dict[str, Any]:
        """A direct run of benchmark ``b`` judged by a static threshold: over 1000 alerts."""
        self.minute += 1
        at = (T0 + dt.timedelta(minutes=self.minute)).isoformat()
        answer = self.http.post(
            "/v0/run",
            json={
                "project": "bench",
                "branch": "main",
                "testbed": "ci",
                "start_time": at,
                "end_time": at,
                "settings": {"adapter": "json"},
                "results": [json.dumps({"b": {"latency": {"value": latency}}})],
                "thresholds": {"models": {"latency": {"test": "static", "upper_boundary": 1000}}},
            },
        )
        assert answer.status_code == 201, answer.text
        found: dict[str, Any] = answer.json()
        return found

    def hook(self, url: str, **body: Any) -> dict[str, Any]:
        answer = self.http.post("/v0/projects/bench/webhooks", json={"url": url, **body})
        assert answer.status_code == 201, answer.text
        found: dict[str, Any] = answer.json()
        return found

    def get(self, path: str) -> Any:
        answer = self.http.get(f"/v0/projects/bench{path}")
        assert answer.status_code == 200, answer.text
        return answer.json()

    def deliveries(self, hook: dict[str, Any]) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.get(f"/webhooks/{hook['uuid']}/deliveries")
        return found

    def alerts(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.get("/alerts")
        return found


def until(server: InProcessServer, condition: Any, message: str) -> Any:
    """Wait for ``condition``, moving the server's clock a second per look (its polls and
    backoffs pass without sleeping through them)."""

    def look() -> Any:
        found = condition()
        if not found:
            server.clock.advance(1.0)
        return found

    return wait_until(look, timeout=30, message=message)


def test_a_raised_alert_is_delivered_signed(
    tmp_path: Path, database_url: str, receiver: Receiver, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with serve_in_process(tmp_path, database_url, **FAST) as server:
        project = Project(server)
        hook = project.hook(receiver.url, secret=SECRET)
        assert hook["secret"] == SECRET
        assert hook["events"] == ["alert.raised", "alert.dismissed"] and hook["format"] == "json"
        project.run(10)
        assert receiver.count() == 0  # nothing alerted, nothing sent
        project.run(5000)
        until(server, receiver.count, "the raised alert's delivery")
        sent = receiver.received[0]
        expected = hmac.new(SECRET.encode(), sent.body, hashlib.sha256).hexdigest()
        assert sent.headers["X-Benchrunner-Signature"] == f"sha256={expected}"
        assert sent.headers["X-Benchrunner-Event"] == "alert.raised"
        assert int(sent.headers["X-Benchrunner-Timestamp"]) > 0
        event = json.loads(sent.body)
        alert = project.alerts()[0]
        assert event["event"] == "alert.raised"
        assert event["delivery"] == sent.headers["X-Benchrunner-Delivery"]
        assert event["project"]["slug"] == "bench"
        assert event["alert"]["uuid"] == alert["uuid"]
        assert event["alert"]["value"] == 5000 and event["alert"]["limit"] == "upper"

        # Dismissing the alert is the next event; each delivery and attempt is visible.
        dismissed = project.http.patch(
            f"/v0/projects/bench/alerts/{alert['uuid']}", json={"status": "dismissed"}
        )
        assert dismissed.status_code == 200, dismissed.text
        until(server, lambda: receiver.count() == 2, "the dismissal's delivery")
        assert receiver.bodies()[1]["event"] == "alert.dismissed"

        def recorded() -> list[dict[str, Any]] | None:
            # The receiver counts a request before the server has read the answer and noted it.
            found = project.deliveries(hook)
            return found if all(d["status"] != "pending" for d in found) else None

        deliveries = wait_until(recorded, timeout=30, message="both deliveries recorded")
        assert [d["event"] for d in deliveries] == ["alert.dismissed", "alert.raised"]
        for delivery in deliveries:
            assert delivery["status"] == "delivered"
            assert [a["status_code"] for a in delivery["attempts"]] == [200]

        # The secret is shown once: never by the reads, never in the log.
        for read in (
            project.http.get("/v0/projects/bench/webhooks"),
            project.http.get(f"/v0/projects/bench/webhooks/{hook['uuid']}"),
            project.http.get(f"/v0/projects/bench/webhooks/{hook['uuid']}/deliveries"),
        ):
            assert read.status_code == 200 and SECRET not in read.text
            assert "secret" not in read.text
        anonymous = httpx.get(f"{server.url}/v0/projects/bench/webhooks", timeout=30)
        assert anonymous.status_code in (401, 403)
        project.close()
    assert "webhook delivery" in caplog.text  # the attempts were logged...
    assert SECRET not in caplog.text  # ...without the secret


def test_a_verdict_is_delivered_as_alert_triaged(
    tmp_path: Path, database_url: str, receiver: Receiver
) -> None:
    with serve_in_process(tmp_path, database_url, **FAST) as server:
        project = Project(server)
        project.hook(receiver.url, events=["alert.triaged"])
        project.run(10)
        project.run(5000)  # raised: not asked for
        (alert,) = project.alerts()
        triaged = project.http.patch(
            f"/v0/projects/bench/alerts/{alert['uuid']}", json={"verdict": "false_positive"}
        )
        assert triaged.status_code == 200, triaged.text
        until(server, receiver.count, "the verdict's delivery")
        (event,) = receiver.bodies()
        assert event["event"] == "alert.triaged"
        assert event["alert"]["uuid"] == alert["uuid"]
        assert event["alert"]["verdict"] == "false_positive"
        project.close()


def test_an_anonymous_caller_manages_no_webhooks_even_where_it_may_run(
    tmp_path: Path, database_url: str
) -> None:
    """An unclaimed project takes anonymous runs; its webhooks are still for members only."""
    with serve_in_process(tmp_path, database_url, **FAST) as server:
        body: dict[str, Any] = {"project": "anon-hooks", "spec": "small", "template": "bench.noop"}
        made = httpx.post(f"{server.url}/v0/run", json=body, timeout=30)
        assert made.status_code == 201, made.text
        slug = made.json()["project"]["slug"]
        hooks = f"{server.url}/v0/projects/{slug}/webhooks"
        created = httpx.post(hooks, json={"url": "http://127.0.0.1:9/x"}, timeout=30)
        listed = httpx.get(hooks, timeout=30)
        assert (created.status_code, listed.status_code) == (401, 401), created.text


def test_a_failing_receiver_gets_retries_with_backoff(
    tmp_path: Path, database_url: str, receiver: Receiver
) -> None:
    receiver.answers = [500, 200]
    with socket.socket() as closed:  # a port nothing listens on once this is closed
        closed.bind(("127.0.0.1", 0))
        dead_url = f"http://127.0.0.1:{closed.getsockname()[1]}/hook"
    settings = {**FAST, "webhook_max_attempts": 3}
    with serve_in_process(tmp_path, database_url, **settings) as server:
        project = Project(server)
        hook = project.hook(receiver.url, events=["alert.raised"])
        dead = project.hook(dead_url, events=["alert.raised"])
        project.run(10)
        project.run(5000)

        def finished(webhook: dict[str, Any]) -> dict[str, Any] | None:
            found = project.deliveries(webhook)
            return found[0] if found and found[0]["status"] != "pending" else None

        delivery = until(server, lambda: finished(hook), "the retried delivery")
        assert delivery["status"] == "delivered"
        assert [a["status_code"] for a in delivery["attempts"]] == [500, 200]
        assert delivery["attempts"][0]["error"] == "answered 500"
        first, second = (dt.datetime.fromisoformat(a["attempted"]) for a in delivery["attempts"])
        assert second - first >= dt.timedelta(seconds=0.5)  # the backoff, jitter included
        assert receiver.count() == 2
        assert receiver.received[0].body == receiver.received[1].body  # the same event resent

        # A receiver that never answers: failed after the last attempt, each error kept.
        given_up = until(server, lambda: finished(dead), "the undeliverable delivery")
        assert given_up["status"] == "failed" and given_up["next_attempt"] is None
        assert len(given_up["attempts"]) == 3
        for attempt in given_up["attempts"]:
            assert attempt["status_code"] is None and "ConnectError" in attempt["error"]
            assert dead_url not in attempt["error"]
        project.close()


def test_a_pending_delivery_survives_a_restart(
    tmp_path: Path, database_url: str, receiver: Receiver
) -> None:
    receiver.answers = [503]
    with serve_in_process(tmp_path, database_url, **FAST) as server:
        project = Project(server)
        hook = project.hook(receiver.url, events=["alert.raised"])
        project.run(10)
        project.run(5000)
        until(server, receiver.count, "a first, failed attempt")
        pending = project.deliveries(hook)
        assert pending[0]["status"] == "pending" and pending[0]["next_attempt"] is not None
        project.close()
    receiver.answers = [200]
    with serve_in_process(tmp_path, database_url, setup=False, **FAST) as restarted:
        project = Project(restarted)

        def delivered() -> list[dict[str, Any]] | None:
            found = project.deliveries(hook)
            return found if found[0]["status"] == "delivered" else None

        delivery = until(restarted, delivered, "the delivery after the restart")[0]
        assert delivery["attempts"][0]["status_code"] == 503
        assert delivery["attempts"][-1]["status_code"] == 200
        assert receiver.received[-1].headers["X-Benchrunner-Event"] == "alert.raised"
        project.close()


def test_slack_format_and_deletion(tmp_path: Path, database_url: str, receiver: Receiver) -> None:
    with serve_in_process(tmp_path, database_url, **FAST) as server:
        project = Project(server)
        slack = project.hook(receiver.url, format="slack", events=["alert.raised"])
        assert len(slack["secret"]) >= 32  # generated when none is given
        project.run(10)
        project.run(5000)
        until(server, receiver.count, "the Slack message")
        message = receiver.bodies()[0]
        assert set(message) == {"text", "blocks"}
        assert "Alert raised in bench" in message["text"] and "5000" in message["text"]
        assert message["blocks"][0]["type"] == "section"
        assert message["blocks"][0]["text"] == {"type": "mrkdwn", "text": message["text"]}
        gone = project.http.delete(f"/v0/projects/bench/webhooks/{slack['uuid']}")
        assert gone.status_code == 204
        assert project.get("/webhooks") == []
        missing = project.http.get(f"/v0/projects/bench/webhooks/{slack['uuid']}")
        assert missing.status_code == 404
        refused = project.http.post(
            "/v0/projects/bench/webhooks", json={"url": "ftp://example.com/x"}
        )
        assert refused.status_code == 400 and "http" in refused.text
        unknown = project.http.post(
            "/v0/projects/bench/webhooks", json={"url": receiver.url, "events": ["job.done"]}
        )
        assert unknown.status_code == 400
        project.close()


@pytest.mark.engine_independent
def test_private_addresses_are_refused_unless_allowed() -> None:
    with pytest.raises(UnsafeUrl):
        check_url("http://127.0.0.1:9/hook", allow_private=False)
    with pytest.raises(UnsafeUrl):
        check_url("http://[::1]/hook", allow_private=False)
    with pytest.raises(UnsafeUrl):
        check_url("http://169.254.169.254/latest", allow_private=False)
    check_url("http://127.0.0.1:9/hook", allow_private=True)
    check_url("https://hooks.example.com/x", allow_private=False)  # checked when resolved
    refused = asyncio.run(address_refused("http://localhost:9/hook", allow_private=False))
    assert refused is not None and "not a public address" in refused
    assert asyncio.run(address_refused("http://localhost:9/hook", allow_private=True)) is None


@pytest.mark.engine_independent
def test_event_names_and_backoff() -> None:
    assert set(EVENTS) == {
        "alert.raised",
        "alert.confirmed",
        "alert.dismissed",
        "alert.triaged",
        "alert.bisected",
    }
    for attempts in range(1, 10):
        delay = backoff(1.0, 4.0, attempts)
        assert min(4.0, 2.0 ** (attempts - 1)) / 2 <= delay <= min(4.0, 2.0 ** (attempts - 1))


@pytest.mark.engine_independent
def test_the_cli_registers_lists_and_deletes_webhooks(
    tmp_path: Path, database_url: str, receiver: Receiver
) -> None:
    with serve_in_process(tmp_path, database_url, **FAST) as server:
        env = {
            "BENCHRUNNER_HOST": server.url,
            "BENCHRUNNER_TOKEN": server.token,
            "BENCHRUNNER_PROJECT": "bench",
            "HOME": str(tmp_path),
            "XDG_CONFIG_HOME": str(tmp_path / "config"),
        }
        created = cli(
            "webhook", "create", receiver.url, "--event", "alert.raised", "--secret", SECRET,
            env=env,
        ).stdout  # fmt: skip
        assert SECRET in created and "shown this once" in created
        hook = json.loads(cli("webhook", "list", "--json", env=env).stdout)[0]
        assert hook["events"] == ["alert.raised"] and "secret" not in hook
        shown = cli("webhook", "show", hook["uuid"], env=env).stdout
        assert receiver.url in shown and SECRET not in shown
        project = Project(server)
        project.run(10)
        project.run(5000)
        until(server, receiver.count, "the delivery")
        deliveries = cli("webhook", "deliveries", hook["uuid"], env=env).stdout
        assert "alert.raised" in deliveries and "delivered" in deliveries
        cli("webhook", "delete", hook["uuid"], env=env)
        assert json.loads(cli("webhook", "list", "--json", env=env).stdout) == []
        refused = cli("webhook", "create", "ftp://example.com/x", env=env, check=False)
        assert refused.returncode != 0 and "http" in refused.stderr + refused.stdout
        project.close()
