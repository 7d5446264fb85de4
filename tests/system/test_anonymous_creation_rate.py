"""Anonymous runs from one source address create at most ``anonymous_projects_per_hour``
projects an hour: beyond, ``429`` with a JSON message and ``Retry-After``, while runs into the
projects already made still go through. The server's clock is the test's: an hour passes by
moving it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.inprocess import InProcessServer, serve_in_process

PER_HOUR = 3


@pytest.fixture
def server(tmp_path: Path, database_url: str) -> Iterator[InProcessServer]:
    with serve_in_process(tmp_path, database_url, anonymous_projects_per_hour=PER_HOUR) as running:
        yield running


def _anonymous_run(server: InProcessServer, project: str | None) -> httpx.Response:
    body: dict[str, Any] = {"spec": "small", "template": "bench.noop"}
    if project is not None:
        body["project"] = project
    return httpx.post(f"{server.url}/v0/run", json=body, timeout=30)


def _organization_count(server: InProcessServer) -> int:
    with server.admin() as client:
        total = client.list_organizations().total
    assert total is not None
    return total


@pytest.mark.engine_independent
def test_anonymous_creations_are_limited_per_source_address(server: InProcessServer) -> None:
    made = []
    for name in ("one", "two", None):  # a creation every 100 s
        made.append(_anonymous_run(server, name))
        server.clock.advance(100)
    assert [r.status_code for r in made] == [201] * PER_HOUR, [r.text for r in made]

    organizations = _organization_count(server)
    server.clock.advance(300)  # now 600 s after the first creation
    refused = _anonymous_run(server, "four")
    assert refused.status_code == 429, refused.text
    error = refused.json()
    assert error["error_code"] == "too_many_requests"
    assert "anonymous_projects_per_hour" in error["message"]
    assert refused.headers["Retry-After"] == "3000"  # the first creation leaves the hour then
    assert _organization_count(server) == organizations  # the refusal left nothing behind

    # Runs into a project already made are not creations.
    again = _anonymous_run(server, "one")
    assert again.status_code == 201
    assert again.json()["project"]["uuid"] == made[0].json()["project"]["uuid"]
    # Nor do signed-in runs count.
    with server.admin() as client:
        assert client.run({"project": "bench", "spec": "small", "template": "bench.noop"})

    server.clock.advance(3000)  # the first creation is an hour old: room for one more
    allowed = _anonymous_run(server, "four")
    assert allowed.status_code == 201, allowed.text
    refused = _anonymous_run(server, "five")
    assert refused.status_code == 429
    assert refused.headers["Retry-After"] == "100"
