"""The registry's HTTP API against a real server: the Distribution Spec's push, pull and content
management endpoints, status codes and error bodies.

One server per engine serves the whole module; each test pushes to a project of its own
(``tenant``), so no test sees another's blobs, tags or upload sessions."""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Iterator

import httpx
import pytest

from tests.harness import Deployment
from tests.oci_layout import OCI_INDEX, OCI_MANIFEST, canonical, descriptor, sha256_digest
from tests.registry_support import (
    error_code,
    image_manifest,
    push_blob,
    push_image,
    registry_token,
    v2,
)


@pytest.fixture
def repo(tenant: Deployment) -> str:
    """The test's own repository: its project's slug."""
    return tenant.project


@pytest.fixture
def pusher(tenant: Deployment, repo: str) -> Iterator[httpx.Client]:
    scope = f"repository:{repo}:pull,push,delete"
    with v2(tenant.server, registry_token(tenant.server, tenant.server.token, scope)) as client:
        yield client


def test_base_endpoint_challenges_then_accepts_a_token(tenant: Deployment) -> None:
    server = tenant.server
    response = httpx.get(f"{server.url}/v2/")
    assert response.status_code == 401
    assert error_code(response) == "UNAUTHORIZED"
    assert response.headers["Docker-Distribution-API-Version"] == "registry/2.0"
    challenge = response.headers["WWW-Authenticate"]
    assert challenge == (
        f'Bearer realm="{server.url}/v0/auth/oci/token",service="127.0.0.1:{server.port}"'
    )
    with v2(server, registry_token(server, None)) as client:
        assert client.get("/").status_code == 200


def test_repository_request_without_token_names_the_scope(tenant: Deployment, repo: str) -> None:
    response = httpx.get(f"{tenant.server.url}/v2/{repo}/tags/list")
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"].endswith(f',scope="repository:{repo}:pull"')
    response = httpx.post(f"{tenant.server.url}/v2/{repo}/blobs/uploads/")
    assert f'scope="repository:{repo}:pull,push"' in response.headers["WWW-Authenticate"]


def test_monolithic_upload_then_head_get_and_delete(repo: str, pusher: httpx.Client) -> None:
    data = b"layer bytes " * 1000
    digest = push_blob(pusher, repo, data)
    head = pusher.head(f"/{repo}/blobs/{digest}")
    assert head.status_code == 200
    assert head.headers["Content-Length"] == str(len(data))
    assert head.headers["Docker-Content-Digest"] == digest
    got = pusher.get(f"/{repo}/blobs/{digest}")
    assert got.content == data
    for wanted, part in (("bytes=5-9", data[5:10]), ("bytes=11990-", data[11990:])):
        partial = pusher.get(f"/{repo}/blobs/{digest}", headers={"Range": wanted})
        assert partial.status_code == 206
        assert partial.content == part
        assert partial.headers["Content-Range"].endswith(f"/{len(data)}")
    outside = pusher.get(f"/{repo}/blobs/{digest}", headers={"Range": "bytes=20000-"})
    assert outside.status_code == 416
    assert pusher.delete(f"/{repo}/blobs/{digest}").status_code == 202
    missing = pusher.get(f"/{repo}/blobs/{digest}")
    assert missing.status_code == 404
    assert error_code(missing) == "BLOB_UNKNOWN"


def test_wrong_digest_is_refused_and_nothing_is_stored(
    tenant: Deployment, repo: str, pusher: httpx.Client
) -> None:
    uploads = tenant.server.data_dir / "blobs" / "_uploads"
    sessions_before = set(uploads.iterdir())  # other tests' sessions on the shared server
    claimed = sha256_digest(b"something else")
    response = pusher.post(f"/{repo}/blobs/uploads/", params={"digest": claimed}, content=b"data")
    assert response.status_code == 400
    assert error_code(response) == "DIGEST_INVALID"
    assert pusher.head(f"/{repo}/blobs/{claimed}").status_code == 404
    assert set(uploads.iterdir()) == sessions_before
    bad = pusher.post(f"/{repo}/blobs/uploads/", params={"digest": "md5:abc"}, content=b"x")
    assert error_code(bad) == "DIGEST_INVALID"


def test_chunked_upload_checks_ranges(tenant: Deployment, repo: str, pusher: httpx.Client) -> None:
    base = tenant.server.url
    started = pusher.post(f"/{repo}/blobs/uploads/")
    assert started.status_code == 202
    location = started.headers["Location"]
    assert re.fullmatch(rf"/v2/{repo}/blobs/uploads/[\w.-]+", location)
    chunks = [b"a" * 5000, b"b" * 3000, b"c" * 10]
    offset = 0
    for chunk in chunks:
        end = offset + len(chunk) - 1
        response = pusher.patch(
            base + location,
            content=chunk,
            headers={
                "Content-Range": f"{offset}-{end}",
                "Content-Type": "application/octet-stream",
            },
        )
        assert response.status_code == 202, response.text
        assert response.headers["Range"] == f"0-{end}"
        location, offset = response.headers["Location"], end + 1
    out_of_order = pusher.patch(base + location, content=b"zz", headers={"Content-Range": "2-3"})
    assert out_of_order.status_code == 416
    assert out_of_order.headers["Range"] == f"0-{offset - 1}"
    status = pusher.get(base + location)
    assert status.status_code == 204
    assert status.headers["Range"] == f"0-{offset - 1}"
    data = b"".join(chunks)
    done = pusher.put(base + location, params={"digest": sha256_digest(data)})
    assert done.status_code == 201, done.text
    assert pusher.get(f"/{repo}/blobs/{sha256_digest(data)}").content == data


def test_upload_sessions_are_bound_to_their_repository(
    tenant: Deployment, repo: str, pusher: httpx.Client
) -> None:
    other_repo = f"{repo}-other"
    with tenant.admin() as admin:
        admin.create_project(tenant.org, other_repo, "public", slug=other_repo)
    location = pusher.post(f"/{repo}/blobs/uploads/").headers["Location"]
    session = location.rsplit("/", 1)[1]
    token = registry_token(tenant.server, tenant.server.token, f"repository:{other_repo}:push")
    with v2(tenant.server, token) as other:
        foreign = other.patch(f"/{other_repo}/blobs/uploads/{session}", content=b"x")
    assert foreign.status_code == 404
    assert error_code(foreign) == "BLOB_UPLOAD_UNKNOWN"
    assert pusher.delete(tenant.server.url + location).status_code == 204
    assert pusher.get(tenant.server.url + location).status_code == 404


def test_manifest_by_tag_and_digest_with_tag_pagination(repo: str, pusher: httpx.Client) -> None:
    digest = push_image(pusher, repo, "v1", b"layer one")
    for tag in ("v2", "a", "z"):
        manifest = pusher.get(f"/{repo}/manifests/{digest}").content
        assert pusher.put(
            f"/{repo}/manifests/{tag}", content=manifest, headers={"Content-Type": OCI_MANIFEST}
        ).is_success
    by_tag = pusher.get(f"/{repo}/manifests/v1")
    assert by_tag.headers["Content-Type"] == OCI_MANIFEST
    assert by_tag.headers["Docker-Content-Digest"] == digest
    assert sha256_digest(by_tag.content) == digest
    head = pusher.head(f"/{repo}/manifests/{digest}")
    assert head.status_code == 200
    assert head.headers["Content-Length"] == str(len(by_tag.content))

    assert pusher.get(f"/{repo}/tags/list").json() == {
        "name": repo,
        "tags": ["a", "v1", "v2", "z"],
    }
    first = pusher.get(f"/{repo}/tags/list", params={"n": 2})
    assert first.json()["tags"] == ["a", "v1"]
    assert first.headers["Link"] == f'</v2/{repo}/tags/list?n=2&last=v1>; rel="next"'
    second = pusher.get(f"/{repo}/tags/list", params={"n": 2, "last": "v1"})
    assert second.json()["tags"] == ["v2", "z"]

    assert pusher.delete(f"/{repo}/manifests/z").status_code == 202
    assert pusher.get(f"/{repo}/manifests/z").status_code == 404
    assert pusher.get(f"/{repo}/manifests/v1").status_code == 200
    assert pusher.delete(f"/{repo}/manifests/{digest}").status_code == 202
    gone = pusher.get(f"/{repo}/manifests/v1")
    assert gone.status_code == 404
    assert error_code(gone) == "MANIFEST_UNKNOWN"


def test_manifest_needs_its_blobs_and_a_matching_digest(repo: str, pusher: httpx.Client) -> None:
    manifest = image_manifest(b"{}", [b"never pushed"])
    push_blob(pusher, repo, b"{}")
    missing = pusher.put(
        f"/{repo}/manifests/v1", content=manifest, headers={"Content-Type": OCI_MANIFEST}
    )
    assert missing.status_code == 400
    assert error_code(missing) == "MANIFEST_BLOB_UNKNOWN"
    wrong = pusher.put(
        f"/{repo}/manifests/{sha256_digest(b'other')}",
        content=manifest,
        headers={"Content-Type": OCI_MANIFEST},
    )
    assert error_code(wrong) == "DIGEST_INVALID"
    garbage = pusher.put(
        f"/{repo}/manifests/v1", content=b"not json", headers={"Content-Type": OCI_MANIFEST}
    )
    assert error_code(garbage) == "MANIFEST_INVALID"
    index = canonical(
        {
            "schemaVersion": 2,
            "mediaType": OCI_INDEX,
            "manifests": [descriptor(OCI_MANIFEST, manifest)],
        }
    )
    dangling = pusher.put(
        f"/{repo}/manifests/multi", content=index, headers={"Content-Type": OCI_INDEX}
    )
    assert error_code(dangling) == "MANIFEST_UNKNOWN"


def test_referrers_list_manifests_by_subject_and_filter_by_artifact_type(
    repo: str,
    pusher: httpx.Client,
) -> None:
    subject_digest = push_image(pusher, repo, "v1", b"the image")
    subject = pusher.get(f"/{repo}/manifests/{subject_digest}").content
    refs = {}
    for kind in ("application/vnd.example.sbom", "application/vnd.example.signature"):
        refs[kind] = push_image(
            pusher,
            repo,
            None,
            kind.encode(),
            artifactType=kind,
            subject=descriptor(OCI_MANIFEST, subject),
        )
    listed = pusher.get(f"/{repo}/referrers/{subject_digest}")
    assert listed.headers["Content-Type"] == OCI_INDEX
    found = {m["artifactType"]: m["digest"] for m in listed.json()["manifests"]}
    assert found == refs
    only = pusher.get(
        f"/{repo}/referrers/{subject_digest}",
        params={"artifactType": "application/vnd.example.sbom"},
    )
    assert only.headers["OCI-Filters-Applied"] == "artifactType"
    assert [m["digest"] for m in only.json()["manifests"]] == [refs["application/vnd.example.sbom"]]
    none = pusher.get(f"/{repo}/referrers/{sha256_digest(b'nothing')}")
    assert none.status_code == 200
    assert none.json()["manifests"] == []


def test_slug_and_uuid_name_the_same_repository(tenant: Deployment, repo: str) -> None:
    with tenant.admin() as admin:
        project_uuid = admin.get_project(repo).uuid
    server = tenant.server
    token = registry_token(server, server.token, f"repository:{project_uuid}:pull,push")
    with v2(server, token) as client:
        digest = push_image(client, project_uuid, "v1", b"by uuid")
    pull = registry_token(server, server.token, f"repository:{repo}:pull")
    with v2(server, pull) as client:
        assert client.get(f"/{repo}/manifests/v1").headers["Docker-Content-Digest"] == digest


def test_cross_repository_mount_needs_pull_on_the_source(tenant: Deployment, repo: str) -> None:
    server = tenant.server
    copy = f"{repo}-copy"
    with tenant.admin() as admin:
        admin.create_project(tenant.org, copy, "public", slug=copy)
    token = registry_token(server, server.token, f"repository:{repo}:pull,push")
    with v2(server, token) as client:
        digest = push_blob(client, repo, b"shared layer")
    without = registry_token(server, server.token, f"repository:{copy}:pull,push")
    with v2(server, without) as client:
        fallback = client.post(f"/{copy}/blobs/uploads/", params={"mount": digest, "from": repo})
    assert fallback.status_code == 202  # no pull on the source in this token: a plain session
    both = registry_token(
        server, server.token, f"repository:{copy}:pull,push", f"repository:{repo}:pull"
    )
    with v2(server, both) as client:
        mounted = client.post(f"/{copy}/blobs/uploads/", params={"mount": digest, "from": repo})
        assert mounted.status_code == 201
        assert mounted.headers["Location"] == f"/v2/{copy}/blobs/{digest}"
        assert client.get(f"/{copy}/blobs/{digest}").content == b"shared layer"


def test_token_endpoint_post_form_and_bad_credentials(tenant: Deployment, repo: str) -> None:
    server = tenant.server
    form = {
        "grant_type": "password",
        "username": "me",
        "password": server.token,
        "scope": f"repository:{repo}:pull",
        "service": "x",
    }
    posted = httpx.post(f"{server.url}/v0/auth/oci/token", data=form)
    assert posted.status_code == 200
    body = posted.json()
    assert body["expires_in"] == 300
    assert body["issued_at"].endswith("Z")
    with v2(server, body["token"]) as client:
        assert client.get(f"/{repo}/tags/list").status_code == 200
    refused = httpx.get(
        f"{server.url}/v0/auth/oci/token",
        params={"scope": f"repository:{repo}:pull"},
        auth=("me", "benchrunner_api_" + "0" * 64),
    )
    assert refused.status_code == 401
    assert "password" in refused.json()["message"]
    with v2(server, "not-a-jwt") as client:
        assert client.get(f"/{repo}/tags/list").status_code == 401


@pytest.mark.engine_independent
def test_bad_manifest_json_is_a_clear_error(repo: str, pusher: httpx.Client) -> None:
    body = json.dumps({"schemaVersion": 1}).encode()
    response = pusher.put(f"/{repo}/manifests/v1", content=body)
    assert response.status_code == 400
    assert "schemaVersion 2" in response.json()["errors"][0]["message"]


@pytest.mark.engine_independent
def test_nested_names_get_a_spec_error(repo: str, pusher: httpx.Client) -> None:
    response = pusher.get(f"/acme/{repo}/manifests/v1")
    assert response.status_code == 404
    assert error_code(response) == "NAME_UNKNOWN"
    assert "without slashes" in response.json()["errors"][0]["message"]


def test_an_interrupted_chunk_leaves_a_session_that_resumes(
    tenant: Deployment, repo: str, pusher: httpx.Client
) -> None:
    server = tenant.server
    log_start = server.log.stat().st_size  # the shared server's log before this test
    data = b"a" * 1000 + b"b" * 1000
    location = pusher.post(f"/{repo}/blobs/uploads/").headers["Location"]
    request = (
        f"PATCH {location} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: {pusher.headers['Authorization']}\r\n"
        "Content-Type: application/octet-stream\r\nContent-Length: 4096\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", server.port)) as raw:
        raw.sendall(request + data[:1000])  # then the client goes away
    # As a resuming client does: ask how much arrived (the server may have taken none of it),
    # and send the rest.
    status = pusher.get(server.url + location)
    assert status.status_code == 204
    end = int(status.headers["Range"].split("-")[1])
    held = 0 if end == 0 else end + 1
    assert held in (0, 1000)
    done = pusher.put(
        server.url + status.headers["Location"],
        params={"digest": sha256_digest(data)},
        content=data[held:],
    )
    assert done.status_code == 201, done.text
    assert pusher.get(f"/{repo}/blobs/{sha256_digest(data)}").content == data
    assert "Traceback" not in server.log_since(log_start)
