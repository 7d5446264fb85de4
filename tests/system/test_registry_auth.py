"""Who may pull and push: users by role, anonymous callers, and the runner's claim token.

One server per engine serves the whole module; each test works in an organization, project and
spec of its own (``tenant``), with users and runners named after it."""

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


def test_private_project_is_invisible_to_an_outsider(tenant: Deployment) -> None:
    server = tenant.server
    secret = f"{tenant.project}-secret"
    with tenant.admin() as admin:
        admin.create_project(tenant.org, secret, "private", slug=secret)
    with v2(server, registry_token(server, server.token, f"repository:{secret}:push")) as client:
        digest = push_blob(client, secret, b"private layer")
    outsider = make_user(server, f"outsider-{tenant.project}@test.dev")
    token = registry_token(server, outsider, f"repository:{secret}:pull")
    for repo in (secret, f"{tenant.project}-no-such-project"):
        scoped = registry_token(server, outsider, f"repository:{repo}:pull")
        with v2(server, scoped) as client:
            response = client.get(f"/{repo}/blobs/{digest}")
        assert response.status_code == 404, repo
        assert error_code(response) == "NAME_UNKNOWN"
    anonymous = registry_token(server, None, f"repository:{secret}:pull")
    with v2(server, anonymous) as client:
        assert error_code(client.get(f"/{secret}/tags/list")) == "NAME_UNKNOWN"
    with v2(server, token) as client:
        assert client.get(f"/{secret}/blobs/{digest}").status_code == 404


def test_a_member_pushes_an_outsider_only_pulls_a_public_project(tenant: Deployment) -> None:
    server, repo = tenant.server, tenant.project
    member = make_user(server, f"member-{repo}@test.dev", member_of=tenant.org)
    outsider = make_user(server, f"outsider-{repo}@test.dev")
    scope = f"repository:{repo}:pull,push"
    with v2(server, registry_token(server, member, scope)) as client:
        digest = push_blob(client, repo, b"member layer")
    with v2(server, registry_token(server, outsider, scope)) as client:
        assert client.get(f"/{repo}/blobs/{digest}").content == b"member layer"
        denied = client.post(f"/{repo}/blobs/uploads/")
        assert denied.status_code == 403
        assert error_code(denied) == "DENIED"
    with v2(server, registry_token(server, None, scope)) as client:
        assert client.head(f"/{repo}/blobs/{digest}").status_code == 200
        assert client.post(f"/{repo}/blobs/uploads/").status_code == 403


def test_a_token_for_one_repository_is_challenged_on_another(tenant: Deployment) -> None:
    server, other = tenant.server, f"{tenant.project}-other"
    with tenant.admin() as admin:
        admin.create_project(tenant.org, other, "public", slug=other)
    scope = f"repository:{tenant.project}:pull"
    with v2(server, registry_token(server, server.token, scope)) as client:
        response = client.get(f"/{other}/tags/list")
    assert response.status_code == 401
    assert f'scope="repository:{other}:pull"' in response.headers["WWW-Authenticate"]


def _claimed_oci_token(tenant: Deployment, image: str) -> str:
    with tenant.admin() as admin:
        admin.run(
            {
                "project": tenant.project,
                "spec": tenant.spec,
                "image": image,
                "settings": {"adapter": "json"},
            }
        )
    return str(tenant.channel("puller").claim()["oci_token"])


def test_runner_claim_token_pulls_its_project_only(tenant: Deployment) -> None:
    server, bench, other = tenant.server, tenant.project, f"{tenant.project}-other"
    with tenant.admin() as admin:
        admin.create_project(tenant.org, other, "public", slug=other)
        bench_uuid = admin.get_project(bench).uuid
    admin_token = registry_token(
        server, server.token, f"repository:{bench}:push", f"repository:{other}:push"
    )
    with v2(server, admin_token) as client:
        image = push_image(client, bench, "v1", b"job layer")
        digest = push_blob(client, other, b"job layer")
    oci_token = _claimed_oci_token(tenant, image)
    runner = jwt.decode(oci_token, options={"verify_signature": False})["sub"]
    with v2(server, oci_token) as client:
        assert client.get(f"/{bench}/manifests/{image}").status_code == 200
        for repo in (bench, bench_uuid):
            assert client.get(f"/{repo}/blobs/{digest}").content == b"job layer"
        foreign = client.get(f"/{other}/blobs/{digest}")
        assert foreign.status_code == 401
        push = client.post(f"/{bench}/blobs/uploads/")
        assert push.status_code == 403
        assert error_code(push) == "DENIED"
        assert client.delete(f"/{bench}/blobs/{digest}").status_code == 403
    # the audit trail: the pull is logged under the runner's UUID
    assert f"GET {image} of project {bench_uuid} by {runner}" in server.log.read_text()


def test_runner_token_is_refused_after_expiry(tenant: Deployment) -> None:
    server = tenant.server
    with tenant.admin() as admin:
        bench_uuid = uuid.UUID(admin.get_project(tenant.project).uuid)
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
        assert client.get(f"/{tenant.project}/tags/list").status_code == 200
    with v2(server, token(now - dt.timedelta(minutes=6))) as client:
        expired = client.get(f"/{tenant.project}/tags/list")
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
            f"{server.url}/v2/{tenant.project}/tags/list",
            headers={"Authorization": f"Bearer {forged}"},
        ).status_code
        == 401
    )


def test_an_image_job_needs_its_image_in_the_projects_registry(tenant: Deployment) -> None:
    with tenant.admin() as admin, pytest.raises(ApiError) as refused:
        admin.run(
            {
                "project": tenant.project,
                "spec": tenant.spec,
                "image": "sha256:" + "a" * 64,
                "settings": {"adapter": "json"},
            }
        )
    assert refused.value.status == 400
    assert "push it first" in refused.value.message
