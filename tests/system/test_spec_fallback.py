"""Specs as Bencher's runner reads them, and the fallback spec an admin marks
(docs/decisions/bencher-runner.md)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from tests.harness import Deployment


def _fallbacks(api: httpx.Client) -> list[str]:
    return [s["slug"] for s in api.get("/v0/specs").json() if s["fallback"] is not None]


def _spec(api: httpx.Client, name: str, **fields: Any) -> dict[str, Any]:
    body = {"name": name, "architecture": "x86_64", "cpu": 2, "memory": 1 << 30, "disk": 1 << 34}
    response = api.post("/v0/specs", json={**body, **fields})
    assert response.status_code == 201, response.text
    return dict(response.json())


def test_a_spec_carries_os_sandbox_and_fallback(deployment: Deployment) -> None:
    with deployment.http() as api:
        plain = _spec(api, "plain")
        assert (plain["os"], plain["sandbox"], plain["fallback"]) == ("linux", None, None)
        assert isinstance(plain["memory"], int) and isinstance(plain["disk"], int)
        vm = _spec(api, "vm", os="linux", sandbox="firecracker", architecture="aarch64")
        assert (vm["sandbox"], vm["architecture"]) == ("firecracker", "aarch64")
        for bad in ({"os": "plan9"}, {"sandbox": "chroot"}, {"fallback": "maybe"}):
            response = api.post(
                "/v0/specs",
                json={
                    "name": "bad",
                    "architecture": "x86_64",
                    "cpu": 1,
                    "memory": 1,
                    "disk": 1,
                    **bad,
                },
            )
            assert response.status_code == 400, (bad, response.text)
        assert [s["slug"] for s in api.get("/v0/specs").json()] == ["plain", "small", "vm"]


def test_one_fallback_at_a_time(deployment: Deployment) -> None:
    with deployment.http() as api:
        _spec(api, "a")
        _spec(api, "b", fallback=True)
        assert _fallbacks(api) == ["b"]
        marked = api.patch("/v0/specs/a", json={"fallback": True})
        assert marked.status_code == 200, marked.text
        assert marked.json()["fallback"] is not None
        assert _fallbacks(api) == ["a"]
        assert api.patch("/v0/specs/a", json={"fallback": True}).status_code == 200
        assert _fallbacks(api) == ["a"]  # marking it again changes nothing
        assert api.patch("/v0/specs/b", json={"fallback": False}).status_code == 200
        assert _fallbacks(api) == ["a"]  # unmarking another spec leaves this one
        unmarked = api.patch("/v0/specs/a", json={"fallback": False})
        assert unmarked.status_code == 200 and unmarked.json()["fallback"] is None
        assert _fallbacks(api) == []

        api.patch("/v0/specs/a", json={"fallback": True})
        archived = api.patch("/v0/specs/a", json={"archived": True})
        assert archived.json()["fallback"] is None  # an archived spec takes no new jobs
        refused = api.patch("/v0/specs/a", json={"fallback": True})
        assert refused.status_code == 409 and "archived" in refused.json()["message"]
        assert _fallbacks(api) == []


def test_concurrent_marks_leave_exactly_one_fallback(deployment: Deployment) -> None:
    with deployment.http() as api:
        names = [f"s{i}" for i in range(6)]
        for name in names:
            _spec(api, name)

        def mark(name: str) -> int:
            with deployment.http() as own:
                return own.patch(f"/v0/specs/{name}", json={"fallback": True}).status_code

        for _ in range(3):
            with ThreadPoolExecutor(len(names)) as pool:
                assert list(pool.map(mark, names)) == [200] * len(names)
            assert len(_fallbacks(api)) == 1


@pytest.mark.engine_independent
def test_only_admins_mark_a_fallback(deployment: Deployment) -> None:
    server = deployment.server
    response = httpx.patch(f"{server.url}/v0/specs/small", json={"fallback": True})
    assert response.status_code == 401
    with deployment.http() as api:
        assert _fallbacks(api) == []
