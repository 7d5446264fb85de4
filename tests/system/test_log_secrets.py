"""No secret in the server's log, at debug level too: the WebSocket handshake's Authorization
header (logged by the websockets library at debug), API tokens, Basic credentials, JWTs, and a
key a runner's failure message carries into the job's transition line. Every line is JSON."""

from __future__ import annotations

import base64
from pathlib import Path

import httpx
import pytest

from tests.harness import RawChannel, deploy

pytestmark = pytest.mark.engine_independent


def test_the_debug_log_holds_no_key_token_or_credential(
    tmp_path: Path, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BENCHRUNNER_LOG_LEVEL", "debug")  # inherited by the server process
    with deploy(tmp_path, database_url) as deployment:
        runner = deployment.runner_process("agent").start()
        job_uuid = deployment.submit("bench.noop")
        deployment.wait_status(job_uuid, "processed")
        slug, key = deployment.new_runner("raw")
        channel = RawChannel(deployment.server, slug, key)
        assert channel.ask({"event": "heartbeat"}) == {"event": "ack"}
        channel.close()
        token = deployment.server.token
        basic = base64.b64encode(f"me:{token}".encode()).decode()
        response = httpx.get(
            f"{deployment.server.url}/v0/auth/oci/token",
            params={"scope": "repository:bench:pull"},
            headers={"Authorization": f"Basic {basic}"},
        )
        assert response.status_code == 200, response.text
        jwt = response.json()["token"]
        httpx.get(
            f"{deployment.server.url}/v2/bench/tags/list",
            headers={"Authorization": f"Bearer {jwt}"},
        )
        with deployment.admin() as client:
            client.get_job("bench", job_uuid)
        runner.kill()  # the next job is the raw channel's
        failing = deployment.submit("bench.noop")
        channel = RawChannel(deployment.server, slug, key)
        assert channel.claim()["uuid"] == failing
        channel.ask({"event": "running"})
        leak = f"the runner leaked Bearer {token} and {runner.key}"
        assert channel.ask({"event": "failed", "job": failing, "results": [], "error": leak}) == {
            "event": "ack",
            "job": failing,
        }
        channel.close()
    log = deployment.server.log.read_text()
    for secret in (runner.key, key, token, basic, jwt):
        assert secret not in log
    lines = deployment.server.log_lines()
    assert any(line["level"] == "debug" for line in lines)
    assert "authorization: [redacted]" in log.lower()  # the handshake was logged, redacted
    failed = [line for line in lines if line.get("job") == failing and "status_to" in line]
    assert failed[-1]["status_to"] == "failed"
    assert "Bearer [redacted]" in failed[-1]["reason"]
