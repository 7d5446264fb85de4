"""No secret in the server's log, at debug level too: the WebSocket handshake's Authorization
header (logged by the websockets library at debug), API tokens, Basic credentials, JWTs."""

from __future__ import annotations

import base64
from pathlib import Path

import httpx
import pytest

from tests.harness import RawChannel, deploy


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
    log = deployment.server.log.read_text()
    for secret in (runner.key, key, token, basic, jwt):
        assert secret not in log
    assert " DEBUG " in log and "authorization: [redacted]" in log.lower()  # it was logged
