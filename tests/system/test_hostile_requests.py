"""Input that once made the server answer 500 (and drop the connection): now a clear 4xx.

Found by probing beyond what schemathesis generates: text PostgreSQL cannot store (NUL),
benchmark names that are not text at all (lone surrogates), results nested too deeply, and Basic
credentials that are not ASCII. Every request goes over one keep-alive connection, which must
answer them all; the server log must hold no traceback.
"""

from __future__ import annotations

import json
import socket
from typing import Any

import httpx
import pytest

from tests.harness import Deployment

DIRECT = {
    "project": "bench",
    "start_time": "2024-01-01T00:00:00Z",
    "end_time": "2024-01-01T00:00:00Z",
}


def _results(text: str) -> dict[str, Any]:
    return {**DIRECT, "results": [text]}


def test_hostile_text_gets_a_clear_4xx_on_one_connection(deployment: Deployment) -> None:
    server = deployment.server
    postgres = server.db.startswith("postgresql")
    admin = {"Authorization": f"Bearer {server.token}"}
    with httpx.Client(base_url=server.url, timeout=30) as client:

        def post(path: str, body: dict[str, Any] | str) -> httpx.Response:
            text = body if isinstance(body, str) else json.dumps(body)
            headers = {**admin, "Content-Type": "application/json"}
            return client.post(path, content=text.encode(), headers=headers)

        # Names the adapter refuses on both engines, as the report's own error would say.
        for results, reason in [
            ('{"b\\ud800": {"m": {"value": 1}}}', "lone surrogate"),
            ('{"b\\u0000": {"m": {"value": 1}}}', "NUL character"),
            ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ]:
            response = post("/v0/run", _results(results))
            assert response.status_code == 400, response.text
            assert reason in response.json()["message"]

        # NUL in text the database stores or looks up: PostgreSQL refuses it (400).
        nul_requests = [
            post("/v0/run", {**_results('{"b": {"m": {"value": 1}}}'), "branch": "a\x00"}),
            post("/v0/organizations", {"name": "a\x00b"}),
            post(
                "/v0/specs",
                {"name": "s\x00", "architecture": "x86_64", "cpu": 1, "memory": 1, "disk": 1},
            ),
            client.get("/v0/runners", params={"name": "a\x00"}, headers=admin),
        ]
        # A reference that is neither a UUID nor a slug names nothing: 404 before any query.
        response = client.get("/v0/projects/a%00b", headers=admin)
        assert response.status_code == 404, response.text
        # A scope naming a repository outside the name grammar: 400 on both engines.
        response = client.get("/v0/auth/oci/token", params={"scope": "repository:a\x00:pull"})
        assert response.status_code == 400, response.text
        assert "invalid repository name" in response.json()["message"]
        for response in nul_requests:
            assert response.status_code < 500, response.text
            if postgres:
                assert response.status_code == 400, response.text
                assert "NUL" in response.json()["message"]
        assert client.get("/v0/server/health").json()["status"] == "ok"
    assert "Traceback" not in server.log.read_text()


@pytest.mark.engine_independent
def test_basic_credentials_that_are_not_ascii_are_refused(deployment: Deployment) -> None:
    request = b"GET /v0/auth/oci/token HTTP/1.1\r\nHost: bench\r\nAuthorization: Basic \xe9\xff\r\n"
    with socket.create_connection(("127.0.0.1", deployment.server.port), timeout=30) as sock:
        sock.sendall(request + b"Connection: close\r\n\r\n")
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 401 "), answer
    assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["error_code"] == "unauthorized"
