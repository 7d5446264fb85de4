"""Each replica caches its lookups (API tokens, roles, projects), and a change made through one
replica takes effect on the others as soon as its notification arrives, well within the
cache's time to live (docs/explanation/lookups-cache.md).

Real replicas (``benchrunner server`` processes) on one fresh PostgreSQL database; the time to
live is left at its default of 60 s, so only the notification can end a cached entry within
the 10 s these tests wait.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.databases import postgres_database
from tests.harness import Deployment, ServerProcess, deploy, wait_until

pytestmark = pytest.mark.postgresql

WITHIN = 10.0
"""Seconds a change may take to reach the other replica: far below the cache's 60 s."""


@pytest.fixture
def two_replicas(tmp_path: Path) -> Iterator[tuple[Deployment, ServerProcess]]:
    with postgres_database() as url, deploy(tmp_path, url) as first:
        yield first, first.add_replica("replica-b")


def _http(server: ServerProcess, token: str) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"}
    return httpx.Client(base_url=server.url, headers=headers, timeout=30)


def _user_with_token(deployment: Deployment, email: str) -> tuple[str, str, str]:
    """A new user (through replica A) and an API token of theirs: the user's UUID, the
    token's UUID and the token."""
    with deployment.http() as admin:
        created = admin.post("/v0/users", json={"name": email.split("@")[0], "email": email})
        created.raise_for_status()
        user_uuid = created.json()["uuid"]
        issued = admin.post(f"/v0/users/{user_uuid}/tokens", json={"name": "ci"})
        issued.raise_for_status()
    return user_uuid, issued.json()["uuid"], issued.json()["token"]


def test_a_token_revoked_through_one_replica_is_refused_by_the_other(
    two_replicas: tuple[Deployment, ServerProcess],
) -> None:
    deployment, replica_b = two_replicas
    user_uuid, token_uuid, token = _user_with_token(deployment, "ci@test.dev")
    with _http(replica_b, token) as on_b:
        for _ in range(2):  # the second answer comes from B's cache
            assert on_b.get(f"/v0/users/{user_uuid}").status_code == 200
        with deployment.http() as admin:  # replica A
            admin.delete(f"/v0/users/{user_uuid}/tokens/{token_uuid}").raise_for_status()
        wait_until(
            lambda: on_b.get(f"/v0/users/{user_uuid}").status_code == 401,
            timeout=WITHIN,
            message="replica B to refuse the revoked token",
        )


def test_a_member_removed_through_one_replica_loses_a_private_project_on_the_other(
    two_replicas: tuple[Deployment, ServerProcess],
) -> None:
    deployment, replica_b = two_replicas
    user_uuid, _, token = _user_with_token(deployment, "dev@test.dev")
    with deployment.http() as admin:
        admin.post(
            f"/v0/organizations/{deployment.org}/projects",
            json={"name": "secret", "visibility": "private"},
        ).raise_for_status()
        admin.post(
            f"/v0/organizations/{deployment.org}/members", json={"email": "dev@test.dev"}
        ).raise_for_status()
    with _http(replica_b, token) as on_b:
        for _ in range(2):
            assert on_b.get("/v0/projects/secret").status_code == 200
        with deployment.http() as admin:
            removed = admin.delete(f"/v0/organizations/{deployment.org}/members/{user_uuid}")
            removed.raise_for_status()
        wait_until(
            lambda: on_b.get("/v0/projects/secret").status_code == 404,
            timeout=WITHIN,
            message="replica B to hide the private project from a former member",
        )
