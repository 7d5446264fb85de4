"""Who may pull and push: users by role, anonymous callers, and the runner's claim token."""

from __future__ import annotations

import datetime as dt
import uuid

import httpx
import jwt
import pytest

from benchrunner.client import ApiError
from benchrunner.server.runners.pull_tokens import runner_pull_token
from benchrunner.server.secret_key import SECRET_NAME
from benchrunner.server.store.engine import make_engine
from benchrunner.server.store.server_state import server_state_get
from tests.harness import Deployment
from tests.registry_support import (
    error_code,
    make_user,
    push_blob,
    push_image,
    registry_token,
    v2,
)


def test_private_project_is_invisible_to_an_outsider(deployment: Deployment) -> None:
    server = deployment.server
    with deployment.admin() as admin:
        admin.create_project("acme", "secret", "private")
    with v2(server, registry_token(server, server.token, "repository:secret:push")) as client:
        digest = push_blob(client, "secret", b"private layer")
    outsider = make_user(server, "outsider@test.dev")
    token = registry_token(server, outsider, "repository:secret:pull")
    for repo in ("secret", "no-such-project"):
        scoped = registry_token(server, outsider, f"repository:{repo}:pull")
        with v2(server, scoped) as client:
            response = client.get(f"/{repo}/blobs/{digest}")
        assert response.status_code == 404, repo
        assert error_code(response) == "NAME_UNKNOWN"
    anonymous = registry_token(server, None, "repository:secret:pull")
    with v2(server, anonymous) as client:
        assert error_code(client.get("/secret/tags/list")) == "NAME_UNKNOWN"
    with v2(server, token) as client:
        assert client.get(f"/secret/blobs/{digest}").status_code == 404


def test_a_member_pushes_an_outsider_only_pulls_a_public_project(deployment: Deployment) -> None:
    server = deployment.server
    member = make_user(server, "member@test.dev", member_of="acme")
    outsider = make_user(server, "outsider@test.dev")
    scope = "repository:bench:pull,push"
    with v2(server, registry_token(server, member, scope)) as client:
        digest = push_blob(client, "bench", b"member layer")
    with v2(server, registry_token(server, outsider, scope)) as client:
        assert client.get(f"/bench/blobs/{digest}").content == b"member layer"
        denied = client.post("/bench/blobs/uploads/")
        assert denied.status_code == 403
        assert error_code(denied) == "DENIED"
    with v2(server, registry_token(server, None, scope)) as client:
        assert client.head(f"/bench/blobs/{digest}").status_code == 200
        assert client.post("/bench/blobs/uploads/").status_code == 403


def test_a_token_for_one_repository_is_challenged_on_another(deployment: Deployment) -> None:
    server = deployment.server
    with deployment.admin() as admin:
        admin.create_project("acme", "other", "public")
    with v2(server, registry_token(server, server.token, "repository:bench:pull")) as client:
        response = client.get("/other/tags/list")
    assert response.status_code == 401
    assert 'scope="repository:other:pull"' in response.headers["WWW-Authenticate"]


def _claimed_oci_token(deployment: Deployment, image: str) -> str:
    with deployment.admin() as admin:
        admin.run(
            {
                "project": deployment.project,
                "spec": deployment.spec,
                "image": image,
                "settings": {"adapter": "json"},
            }
        )
    return str(deployment.channel("puller").claim()["oci_token"])


def test_runner_claim_token_pulls_its_project_only(deployment: Deployment) -> None:
    server = deployment.server
    with deployment.admin() as admin:
        admin.create_project("acme", "other", "public")
        bench_uuid = admin.get_project("bench")["uuid"]
    admin_token = registry_token(
        server, server.token, "repository:bench:push", "repository:other:push"
    )
    with v2(server, admin_token) as client:
        image = push_image(client, "bench", "v1", b"job layer")
        digest = push_blob(client, "other", b"job layer")
    oci_token = _claimed_oci_token(deployment, image)
    runner = jwt.decode(oci_token, options={"verify_signature": False})["sub"]
    with v2(server, oci_token) as client:
        assert client.get(f"/bench/manifests/{image}").status_code == 200
        for repo in ("bench", bench_uuid):
            assert client.get(f"/{repo}/blobs/{digest}").content == b"job layer"
        other = client.get(f"/other/blobs/{digest}")
        assert other.status_code == 401
        push = client.post("/bench/blobs/uploads/")
        assert push.status_code == 403
        assert error_code(push) == "DENIED"
        assert client.delete(f"/bench/blobs/{digest}").status_code == 403
    # the audit trail: the pull is logged under the runner's UUID
    assert f"GET {image} of project {bench_uuid} by {runner}" in server.log.read_text()


def test_runner_token_is_refused_after_expiry(deployment: Deployment) -> None:
    server = deployment.server
    with deployment.admin() as admin:
        bench_uuid = uuid.UUID(admin.get_project("bench")["uuid"])
    engine = make_engine(server.db, writer=False)
    with engine.connect() as conn:
        secret = server_state_get(conn, SECRET_NAME)
    engine.dispose()
    assert secret is not None

    def token(now: dt.datetime) -> str:
        return runner_pull_token(
            secret,
            issuer=server.url,
            runner_uuid=uuid.uuid4(),
            project_uuid=bench_uuid,
            ttl=dt.timedelta(minutes=5),
            now=now,
        )

    now = dt.datetime.now(dt.UTC)
    with v2(server, token(now)) as client:
        assert client.get("/bench/tags/list").status_code == 200
    with v2(server, token(now - dt.timedelta(minutes=6))) as client:
        expired = client.get("/bench/tags/list")
    assert expired.status_code == 401
    assert error_code(expired) == "UNAUTHORIZED"
    forged = runner_pull_token(
        "not the server secret but just as long as one",
        issuer=server.url,
        runner_uuid=uuid.uuid4(),
        project_uuid=bench_uuid,
        ttl=dt.timedelta(minutes=5),
        now=now,
    )
    assert (
        httpx.get(
            f"{server.url}/v2/bench/tags/list", headers={"Authorization": f"Bearer {forged}"}
        ).status_code
        == 401
    )


def test_an_image_job_needs_its_image_in_the_projects_registry(deployment: Deployment) -> None:
    with deployment.admin() as admin, pytest.raises(ApiError) as refused:
        admin.run(
            {
                "project": deployment.project,
                "spec": deployment.spec,
                "image": "sha256:" + "a" * 64,
                "settings": {"adapter": "json"},
            }
        )
    assert refused.value.status == 400
    assert "push it first" in refused.value.message
