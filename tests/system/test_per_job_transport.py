"""The per-job transport at its edges: the long-poll claim (``POST
/v0/runners/{runner}/jobs``) and a job's own WebSocket (``/v0/runners/{runner}/jobs/{job}``),
driven by hand against a server in this process (its clock is the test's). The scenarios a real
runner goes through on both transports are parametrized over them in ``test_lifecycle``,
``test_timeouts``, ``test_recovery`` and ``test_runner_once``.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import ClientConnection, connect

from benchrunner.protocol import EXTENSIONS_HEADER, OUR_EXTENSIONS, TEMPLATE_EXTENSION
from tests.harness import cli, output_json, wait_until
from tests.inprocess import InProcessServer, serve_in_process


@dataclass
class PerJobRunner:
    """A runner driven by hand over the per-job endpoints."""

    server: InProcessServer
    slug: str
    key: str

    def claim(
        self, body: Any = None, *, extensions: bool = False, templates: bool = True
    ) -> httpx.Response:
        """``extensions``: announce all of ours; else only ``template`` (with ``templates``), as
        the jobs here are template jobs, which a runner that did not announce it is not offered."""
        headers = {"Authorization": f"Bearer {self.key}"}
        if extensions:
            headers[EXTENSIONS_HEADER] = ", ".join(OUR_EXTENSIONS)
        elif templates:
            headers[EXTENSIONS_HEADER] = TEMPLATE_EXTENSION
        with httpx.Client(base_url=self.server.url, headers=headers, timeout=60) as http:
            if body is None:
                return http.post(f"/v0/runners/{self.slug}/jobs")
            return http.post(f"/v0/runners/{self.slug}/jobs", json=body)

    def claimed(self) -> dict[str, Any]:
        response = self.claim({"poll_timeout": 10})
        assert response.status_code == 200, response.text
        claimed = response.json()
        assert claimed is not None
        return claimed  # type: ignore[no-any-return]

    def socket(self, job: str, *extensions: str) -> JobSocket:
        return JobSocket(self.server, self.slug, self.key, job, extensions)

    def refused(self, job: str) -> tuple[int, dict[str, Any]]:
        with pytest.raises(InvalidStatus) as info:
            self.socket(job)
        response = info.value.response
        return response.status_code, json.loads(response.body or b"{}")


ANSWER_TIMEOUT = 60
"""Seconds a job socket's answer may take: milliseconds normally, many seconds on a loaded
machine, and waiting longer costs a passing test nothing."""


class JobSocket:
    def __init__(
        self, server: InProcessServer, slug: str, key: str, job: str, extensions: tuple[str, ...]
    ) -> None:
        headers = {"Authorization": f"Bearer {key}"}
        if extensions:
            headers[EXTENSIONS_HEADER] = ", ".join(extensions)
        self.ws: ClientConnection = connect(
            f"ws://127.0.0.1:{server.port}/v0/runners/{slug}/jobs/{job}",
            additional_headers=headers,
            open_timeout=10,
            legacy=True,
        )

    def ask(self, message: dict[str, Any]) -> dict[str, Any]:
        self.ws.send(json.dumps(message))
        return json.loads(self.ws.recv(timeout=ANSWER_TIMEOUT))  # type: ignore[no-any-return]

    def close(self) -> None:
        self.ws.close()

    def closed_by_server(self) -> tuple[int, str]:
        """The close frame the server ends the socket with (it sends nothing more first)."""
        with pytest.raises(ConnectionClosed):
            self.ws.recv(timeout=ANSWER_TIMEOUT)
        close = self.ws.protocol.close_rcvd
        assert close is not None
        return close.code, close.reason


@pytest.fixture
def server(tmp_path: Path, database_url: str) -> Iterator[InProcessServer]:
    with serve_in_process(tmp_path, database_url, runner_claims_per_minute=0) as server:
        yield server


def new_runner(server: InProcessServer, name: str) -> PerJobRunner:
    with server.admin() as client:
        created = client.create_runner(name, ["small"])
    return PerJobRunner(server, created.slug, created.token)


def test_the_claim_answers_the_job_or_null(server: InProcessServer) -> None:
    runner = new_runner(server, "poller")
    started = time.monotonic()
    nothing = runner.claim({"poll_timeout": 1})
    assert (nothing.status_code, nothing.json()) == (200, None)
    assert time.monotonic() - started >= 0.9  # it waited for a job
    job_uuid = server.submit("bench.noop")
    # A runner that did not announce ``template`` (Bencher's) is not offered a template job.
    assert runner.claim({"poll_timeout": 1}, templates=False).json() is None
    claimed = runner.claimed()
    assert claimed["uuid"] == job_uuid
    assert set(claimed) == {"uuid", "spec", "config", "oci_token", "timeout", "created"}
    assert claimed["spec"]["slug"] == "small"
    assert claimed["config"]["template"] == "bench.noop"
    assert server.job(job_uuid).status == "claimed"
    # A runner announcing the nonce extension gets the claim's nonce (it signs with it).
    server.submit("bench.noop")
    assert len(runner.claim({"poll_timeout": 10}, extensions=True).json()["nonce"]) == 32


@pytest.mark.engine_independent
@pytest.mark.parametrize(
    ("body", "explained"),
    [
        ({"poll_timeout": 0}, "poll_timeout: Input should be greater than or equal to 1"),
        ({"poll_timeout": 601}, "poll_timeout: Input should be less than or equal to 600"),
        ({"poll_timeout": "soon"}, "poll_timeout: Input should be a valid integer"),
        ({"poll_timeout": 1.5}, "poll_timeout: Input should be a valid integer"),
        ([1], "valid dictionary"),
    ],
)
def test_a_bad_poll_timeout_is_a_clear_400(
    server: InProcessServer, body: Any, explained: str
) -> None:
    response = new_runner(server, "careless").claim(body)
    assert response.status_code == 400, response.text
    assert explained in response.json()["message"]


def test_a_claim_needs_the_runners_own_key(server: InProcessServer) -> None:
    owner, other = new_runner(server, "owner"), new_runner(server, "other")
    for slug, key in [(owner.slug, "bencher_runner_" + "0" * 64), (other.slug, owner.key)]:
        response = PerJobRunner(server, slug, key).claim({"poll_timeout": 1})
        assert response.status_code == 401, response.text
        assert "invalid runner token" in response.json()["message"]


def test_claims_are_rate_limited_per_runner(tmp_path: Path, database_url: str) -> None:
    with serve_in_process(tmp_path, database_url, runner_claims_per_minute=2) as server:
        eager, calm = new_runner(server, "eager"), new_runner(server, "calm")
        for _ in range(2):
            assert eager.claim({"poll_timeout": 1}).status_code == 200
        refused = eager.claim({"poll_timeout": 1})
        assert refused.status_code == 429
        assert int(refused.headers["Retry-After"]) == 60  # the server's clock stood still
        assert "at most 2 claims a minute" in refused.json()["message"]
        assert calm.claim({"poll_timeout": 1}).status_code == 200
        server.clock.advance(60)
        assert eager.claim({"poll_timeout": 1}).status_code == 200


def test_a_long_poll_whose_client_went_away_leaves_no_job_claimed(
    server: InProcessServer,
) -> None:
    vanishing, present = new_runner(server, "vanishing"), new_runner(server, "present")
    waiting = server.state("lifecycle").dispatcher
    body = json.dumps({"poll_timeout": 300}).encode()
    request = (
        f"POST /v0/runners/{vanishing.slug}/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {vanishing.key}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as raw:
        raw.sendall(request + body)
        wait_until(lambda: waiting.waiting == 1, message="the long-poll to wait for a job")
    # The connection is closed: the server stops waiting, so the next job is not claimed for it.
    wait_until(lambda: waiting.waiting == 0, message="the server to notice the dropped poll")
    job_uuid = server.submit("bench.noop")
    assert present.claimed()["uuid"] == job_uuid
    claims = [e for e in server.job(job_uuid).events if e.event_type == "job_claimed"]
    assert [e.actor for e in claims] == [present.slug]


def test_seed_000_messages_take_a_job_to_processed(server: InProcessServer) -> None:
    runner = new_runner(server, "seed000")
    job_uuid = server.submit("bench.noop")
    ws = runner.socket(runner.claimed()["uuid"])
    assert ws.ask({"event": "running"}) == {"event": "ack", "job": job_uuid}
    assert ws.ask({"event": "heartbeat"}) == {"event": "ack", "job": job_uuid}
    stdout = '{"noop": {"latency": {"value": 3}}}\n'
    completed = {"event": "completed", "exit_code": 0, "stdout": stdout}
    assert ws.ask(completed) == {"event": "ack", "job": job_uuid}
    assert ws.closed_by_server() == (1000, '"job_completed"')  # as Bencher's per-job handler
    job = wait_until(lambda: (j := server.job(job_uuid)).status == "processed" and j)
    [result] = output_json(job)["results"]
    assert (result["exit_code"], result["stdout"]) == (0, stdout)
    # A finished job's socket is closed to its runner: only claimed or running jobs take one.
    status, body = runner.refused(job_uuid)
    assert (status, body["status"]) == (409, "processed")
    assert "only a claimed or running job" in body["message"]


def test_a_failed_message_fails_the_job(server: InProcessServer) -> None:
    runner = new_runner(server, "failing")
    job_uuid = server.submit("bench.noop")
    ws = runner.socket(runner.claimed()["uuid"])
    assert ws.ask({"event": "running"})["event"] == "ack"
    failed = {"event": "failed", "error": "the VM would not boot", "exit_code": 3}
    assert ws.ask(failed) == {"event": "ack", "job": job_uuid}
    assert ws.closed_by_server() == (1000, '"job_failed"')
    job = server.job(job_uuid)
    assert job.status == "failed"
    assert output_json(job)["error"] == "the VM would not boot"
    assert [r["exit_code"] for r in output_json(job)["results"]] == [3]


def test_only_the_runners_own_claimed_or_running_jobs_take_a_socket(
    server: InProcessServer,
) -> None:
    mine, theirs = new_runner(server, "mine"), new_runner(server, "theirs")
    pending = server.submit("bench.noop")
    assert mine.refused(pending)[0] == 404  # claimed by nobody yet
    claimed = theirs.claimed()["uuid"]
    status, body = mine.refused(claimed)
    assert status == 404 and "not found among runner" in body["message"]
    assert mine.refused("not-a-uuid")[0] == 404
    assert (
        PerJobRunner(server, theirs.slug, "bencher_runner_" + "0" * 64).refused(claimed)[0] == 401
    )
    theirs.socket(claimed).close()  # its own runner is welcome


def test_a_running_job_takes_its_runner_back_and_running_is_idempotent(
    server: InProcessServer,
) -> None:
    runner = new_runner(server, "flaky")
    job_uuid = server.submit("bench.noop")
    ws = runner.socket(runner.claimed()["uuid"])
    assert ws.ask({"event": "running"}) == {"event": "ack", "job": job_uuid}
    started = server.job(job_uuid).started
    ws.close()
    server.clock.advance(5)
    again = runner.socket(job_uuid)
    assert again.ask({"event": "running"}) == {"event": "ack", "job": job_uuid}
    assert again.ask({"event": "heartbeat"}) == {"event": "ack", "job": job_uuid}
    job = server.job(job_uuid)
    assert (job.status, job.started) == ("running", started)
    assert [e.event_type for e in job.events].count("job_started") == 1
    done = {"event": "completed", "job": job_uuid, "results": [{"exit_code": 0}]}
    assert again.ask(done) == {"event": "ack", "job": job_uuid}
    assert again.closed_by_server() == (1000, '"job_completed"')
    assert server.job(job_uuid).status in ("completed", "processed")


@pytest.mark.parametrize(
    ("silence", "status", "reason"),
    [(6, "failed", "heartbeat_timeout"), (100, "canceled", "job_timeout_exceeded")],
)
def test_a_silent_job_socket_times_out_like_the_channel(
    tmp_path: Path, database_url: str, silence: float, status: str, reason: str
) -> None:
    with serve_in_process(tmp_path, database_url, heartbeat_timeout=5.0) as server:
        runner = new_runner(server, "silent")
        job_uuid = server.submit("bench.noop")  # its timeout: 30 s
        ws = runner.socket(runner.claimed()["uuid"])
        assert ws.ask({"event": "running"})["event"] == "ack"
        server.clock.advance(silence)
        with pytest.raises(ConnectionClosed):
            ws.ws.recv(timeout=ANSWER_TIMEOUT)
        close = ws.ws.protocol.close_rcvd
        assert close is not None and (close.code, close.reason) == (1000, f'"{reason}"')
        job = server.job(job_uuid)
        assert job.status == status
        assert reason in str(job.events[-1].message)


def test_a_message_for_another_job_or_a_ready_changes_nothing(server: InProcessServer) -> None:
    runner = new_runner(server, "confused")
    first, second = server.submit("bench.noop"), server.submit("bench.noop")
    assert runner.claimed()["uuid"] == first
    ws = runner.socket(first, "error")
    reply = ws.ask({"event": "canceled", "job": second})
    assert reply["event"] == "error" and f"this socket is job {first}'s" in reply["message"]
    reply = ws.ask({"event": "ready", "poll_timeout": 5})
    assert reply["event"] == "error" and "POST /v0/runners/{runner}/jobs" in reply["message"]
    ws.close()
    assert server.job(first).status == "claimed"
    assert server.job(second).status == "pending"


def test_a_user_cancel_reaches_the_job_socket(server: InProcessServer) -> None:
    runner = new_runner(server, "obedient")
    job_uuid = server.submit("bench.noop")
    ws = runner.socket(runner.claimed()["uuid"])
    assert ws.ask({"event": "running"})["event"] == "ack"
    with server.admin() as client:
        client.cancel_job("bench", job_uuid)
    assert ws.ask({"event": "heartbeat"}) == {"event": "cancel", "job": job_uuid}
    assert ws.closed_by_server() == (1000, '"job_canceled"')  # the job ended with the cancel
    assert server.job(job_uuid).status == "canceled"
    # The runner's `canceled` finds no socket left for the job: it has finished.
    status, body = runner.refused(job_uuid)
    assert (status, body["status"]) == (409, "canceled")


def test_a_runners_own_cancel_closes_its_job_socket(server: InProcessServer) -> None:
    runner = new_runner(server, "quitter")
    job_uuid = server.submit("bench.noop")
    ws = runner.socket(runner.claimed()["uuid"])
    assert ws.ask({"event": "running"})["event"] == "ack"
    assert ws.ask({"event": "canceled"}) == {"event": "ack", "job": job_uuid}
    assert ws.closed_by_server() == (1000, '"job_canceled_by_runner"')
    assert server.job(job_uuid).status == "canceled"


@pytest.mark.engine_independent
def test_a_per_job_runner_with_a_bad_key_exits_2(server: InProcessServer, tmp_path: Path) -> None:
    slug = new_runner(server, "badkey").slug
    result = cli(
        *("runner", "up", "--host", server.url, "--runner", slug, "--transport", "per-job"),
        *("--templates", str(tmp_path / "templates.toml"), "--spool", str(tmp_path / "spool")),
        env={"BENCHRUNNER_RUNNER_KEY": "bencher_runner_" + "0" * 64},
        check=False,
    )
    assert result.returncode == 2, result.stderr
    assert "server refused the runner's claim: HTTP 401" in result.stderr
