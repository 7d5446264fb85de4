"""Seed 000's per-job transport at its edges: the long-poll claim (``POST
/v0/runners/{runner}/jobs``) and a job's own WebSocket (``/v0/runners/{runner}/jobs/{job}``),
driven by hand. The scenarios a real runner goes through on both transports are parametrized
over them in ``test_lifecycle``, ``test_timeouts``, ``test_recovery`` and ``test_runner_once``.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import ClientConnection, connect

from benchrunner.protocol import EXTENSIONS_HEADER, OUR_EXTENSIONS
from tests.harness import Deployment, deploy, wait_until


def _claim(
    deployment: Deployment,
    slug: str,
    key: str,
    body: Any = None,
    *,
    extensions: bool = False,
) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}"}
    if extensions:
        headers[EXTENSIONS_HEADER] = ", ".join(OUR_EXTENSIONS)
    with httpx.Client(base_url=deployment.server.url, headers=headers, timeout=60) as http:
        if body is None:
            return http.post(f"/v0/runners/{slug}/jobs")
        return http.post(f"/v0/runners/{slug}/jobs", json=body)


def _claimed(deployment: Deployment, slug: str, key: str) -> dict[str, Any]:
    response = _claim(deployment, slug, key, {"poll_timeout": 10})
    assert response.status_code == 200, response.text
    claimed = response.json()
    assert claimed is not None
    return claimed  # type: ignore[no-any-return]


class JobSocket:
    def __init__(self, deployment: Deployment, slug: str, key: str, job: str) -> None:
        self.ws: ClientConnection = connect(
            f"{deployment.server.ws_url}/v0/runners/{slug}/jobs/{job}",
            additional_headers={"Authorization": f"Bearer {key}"},
            open_timeout=10,
            legacy=True,
        )

    def ask(self, message: dict[str, Any]) -> dict[str, Any]:
        self.ws.send(json.dumps(message))
        return json.loads(self.ws.recv(timeout=10))  # type: ignore[no-any-return]

    def close(self) -> None:
        self.ws.close()


def _refused(deployment: Deployment, slug: str, key: str, job: str) -> tuple[int, dict[str, Any]]:
    with pytest.raises(InvalidStatus) as info:
        JobSocket(deployment, slug, key, job)
    response = info.value.response
    return response.status_code, json.loads(response.body or b"{}")


def test_the_claim_answers_the_job_or_null(deployment: Deployment) -> None:
    slug, key = deployment.new_runner("poller")
    started = time.monotonic()
    nothing = _claim(deployment, slug, key, {"poll_timeout": 1})
    assert (nothing.status_code, nothing.json()) == (200, None)
    assert time.monotonic() - started >= 0.9  # it waited for a job
    job_uuid = deployment.submit("bench.noop")
    claimed = _claimed(deployment, slug, key)
    assert claimed["uuid"] == job_uuid
    assert set(claimed) == {"uuid", "spec", "config", "oci_token", "timeout", "created"}
    assert claimed["spec"]["slug"] == deployment.spec
    assert claimed["config"]["template"] == "bench.noop"
    assert deployment.status(job_uuid) == "claimed"
    # A runner announcing the nonce extension gets the claim's nonce (it signs with it).
    deployment.submit("bench.noop")
    response = _claim(deployment, slug, key, {"poll_timeout": 10}, extensions=True)
    assert len(response.json()["nonce"]) == 32


@pytest.mark.parametrize(
    ("body", "explained"),
    [
        ({"poll_timeout": 0}, "greater than or equal to 1"),
        ({"poll_timeout": 601}, "less than or equal to 600"),
        ({"poll_timeout": "soon"}, "valid integer"),
        ({"poll_timeout": 1.5}, "integer"),
        ([1], "valid dictionary"),
    ],
)
def test_a_bad_poll_timeout_is_a_clear_400(
    deployment: Deployment, body: Any, explained: str
) -> None:
    slug, key = deployment.new_runner("careless")
    response = _claim(deployment, slug, key, body)
    assert response.status_code == 400, response.text
    assert explained in response.json()["message"]


def test_a_claim_needs_the_runners_own_key(deployment: Deployment) -> None:
    slug, key = deployment.new_runner("owner")
    other, _ = deployment.new_runner("other")
    for runner, token in [(slug, "bencher_runner_" + "0" * 64), (other, key), (slug, "nope")]:
        response = _claim(deployment, runner, token, {"poll_timeout": 1})
        assert response.status_code == 401, response.text
        assert "invalid runner token" in response.json()["message"]


@pytest.fixture
def claim_limited(tmp_path: Path, database_url: str) -> Iterator[Deployment]:
    env = {"BENCHRUNNER_RUNNER_CLAIMS_PER_MINUTE": "2"}
    with deploy(tmp_path, database_url, env=env) as deployment:
        yield deployment


def test_claims_are_rate_limited_per_runner(claim_limited: Deployment) -> None:
    deployment = claim_limited
    eager, key = deployment.new_runner("eager")
    calm, calm_key = deployment.new_runner("calm")
    for _ in range(2):
        assert _claim(deployment, eager, key, {"poll_timeout": 1}).status_code == 200
    refused = _claim(deployment, eager, key, {"poll_timeout": 1})
    assert refused.status_code == 429
    assert 1 <= int(refused.headers["Retry-After"]) <= 60
    assert "at most 2 claims a minute" in refused.json()["message"]
    assert _claim(deployment, calm, calm_key, {"poll_timeout": 1}).status_code == 200


def _server_log(deployment: Deployment) -> str:
    return deployment.server.log.read_text(errors="replace")


def test_a_long_poll_whose_client_went_away_leaves_no_job_claimed(deployment: Deployment) -> None:
    slug, key = deployment.new_runner("vanishing")
    body = json.dumps({"poll_timeout": 300}).encode()
    request = (
        f"POST /v0/runners/{slug}/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {key}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", deployment.server.port), timeout=10) as raw:
        raw.sendall(request + body)
        time.sleep(0.5)  # the scenario: the runner waits a moment, then its connection drops
    wait_until(
        lambda: f"runner {slug} went away during its long-poll" in _server_log(deployment),
        message="the server to notice the dropped long-poll",
    )
    job_uuid = deployment.submit("bench.noop")
    other, other_key = deployment.new_runner("present")
    assert _claimed(deployment, other, other_key)["uuid"] == job_uuid
    job = deployment.job(job_uuid)
    claims = [e for e in job["events"] if e["event_type"] == "job_claimed"]
    assert [e["actor"] for e in claims] == [other]


def test_seed_000_messages_take_a_job_to_processed(deployment: Deployment) -> None:
    slug, key = deployment.new_runner("seed000")
    job_uuid = deployment.submit("bench.noop")
    claimed = _claimed(deployment, slug, key)
    ws = JobSocket(deployment, slug, key, claimed["uuid"])
    assert ws.ask({"event": "running"}) == {"event": "ack", "job": job_uuid}
    assert ws.ask({"event": "heartbeat"}) == {"event": "ack", "job": job_uuid}
    stdout = '{"noop": {"latency": {"value": 3}}}\n'
    completed = {"event": "completed", "exit_code": 0, "stdout": stdout}
    assert ws.ask(completed) == {"event": "ack", "job": job_uuid}
    ws.close()
    job = deployment.wait_status(job_uuid, "processed")
    assert job["output"]["results"] == [{"exit_code": 0, "stdout": stdout}]
    # A finished job's socket is closed to its runner: only claimed or running jobs take one.
    status, body = _refused(deployment, slug, key, job_uuid)
    assert status == 409 and body["status"] == "processed"
    assert "only a claimed or running job" in body["message"]


def test_a_failed_message_fails_the_job(deployment: Deployment) -> None:
    slug, key = deployment.new_runner("failing")
    job_uuid = deployment.submit("bench.noop")
    ws = JobSocket(deployment, slug, key, _claimed(deployment, slug, key)["uuid"])
    assert ws.ask({"event": "running"})["event"] == "ack"
    failed = {"event": "failed", "error": "the VM would not boot", "exit_code": 3}
    assert ws.ask(failed) == {"event": "ack", "job": job_uuid}
    job = deployment.wait_status(job_uuid, "failed")
    assert job["output"]["error"] == "the VM would not boot"
    assert job["output"]["results"] == [{"exit_code": 3}]


def test_only_the_runners_own_claimed_or_running_jobs_take_a_socket(
    deployment: Deployment,
) -> None:
    slug, key = deployment.new_runner("mine")
    other, other_key = deployment.new_runner("theirs")
    pending = deployment.submit("bench.noop")
    assert _refused(deployment, slug, key, pending)[0] == 404  # claimed by nobody yet
    theirs = _claimed(deployment, other, other_key)["uuid"]
    status, body = _refused(deployment, slug, key, theirs)
    assert status == 404 and "not found among runner" in body["message"]
    assert _refused(deployment, slug, key, "not-a-uuid")[0] == 404
    assert _refused(deployment, other, "bencher_runner_" + "0" * 64, theirs)[0] == 401
    JobSocket(deployment, other, other_key, theirs).close()  # its own runner is welcome


def test_a_running_job_takes_its_runner_back_and_running_is_idempotent(
    deployment: Deployment,
) -> None:
    slug, key = deployment.new_runner("flaky")
    job_uuid = deployment.submit("bench.noop")
    ws = JobSocket(deployment, slug, key, _claimed(deployment, slug, key)["uuid"])
    assert ws.ask({"event": "running"}) == {"event": "ack", "job": job_uuid}
    started = deployment.job(job_uuid)["started"]
    ws.close()
    again = JobSocket(deployment, slug, key, job_uuid)
    assert again.ask({"event": "running"}) == {"event": "ack", "job": job_uuid}
    assert again.ask({"event": "heartbeat"}) == {"event": "ack", "job": job_uuid}
    job = deployment.job(job_uuid)
    assert (job["status"], job["started"]) == ("running", started)
    assert [e["event_type"] for e in job["events"]].count("job_started") == 1
    done = {"event": "completed", "job": job_uuid, "results": [{"exit_code": 0}]}
    assert again.ask(done) == {"event": "ack", "job": job_uuid}
    deployment.wait_status(job_uuid, "processed")


def test_a_message_for_another_job_or_a_ready_changes_nothing(deployment: Deployment) -> None:
    slug, key = deployment.new_runner("confused")
    first = deployment.submit("bench.noop")
    second = deployment.submit("bench.noop")
    assert _claimed(deployment, slug, key)["uuid"] == first
    headers = {"Authorization": f"Bearer {key}", EXTENSIONS_HEADER: "error"}
    ws = connect(
        f"{deployment.server.ws_url}/v0/runners/{slug}/jobs/{first}",
        additional_headers=headers,
        open_timeout=10,
        legacy=True,
    )
    try:
        ws.send(json.dumps({"event": "canceled", "job": second}))
        reply = json.loads(ws.recv(timeout=10))
        assert reply["event"] == "error" and f"this socket is job {first}'s" in reply["message"]
        ws.send(json.dumps({"event": "ready", "poll_timeout": 5}))
        reply = json.loads(ws.recv(timeout=10))
        assert reply["event"] == "error" and "POST /v0/runners/{runner}/jobs" in reply["message"]
    finally:
        ws.close()
    assert deployment.status(first) == "claimed"
    assert deployment.status(second) == "pending"


def test_a_user_cancel_reaches_the_job_socket(deployment: Deployment) -> None:
    slug, key = deployment.new_runner("obedient")
    job_uuid = deployment.submit("bench.noop")
    ws = JobSocket(deployment, slug, key, _claimed(deployment, slug, key)["uuid"])
    assert ws.ask({"event": "running"})["event"] == "ack"
    with deployment.admin() as client:
        client.cancel_job(deployment.project, job_uuid)
    assert ws.ask({"event": "heartbeat"}) == {"event": "cancel", "job": job_uuid}
    assert ws.ask({"event": "canceled"}) == {"event": "ack", "job": job_uuid}
    assert deployment.job(job_uuid)["status"] == "canceled"


def test_a_per_job_runner_with_a_bad_key_exits_2(deployment: Deployment) -> None:
    runner = deployment.runner_process("badkey")
    runner.transport = "per-job"
    runner.key = "bencher_runner_" + "0" * 64
    runner.start()
    assert runner.proc is not None and runner.proc.wait(timeout=60) == 2
    assert "server refused the runner's claim: HTTP 401" in runner.output()
