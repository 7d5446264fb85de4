"""The registry's HTTP API against a real server: the Distribution Spec's push, pull and content
management endpoints, status codes and error bodies."""

from __future__ import annotations

import json
import re
import socket

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

PUSH = "repository:bench:pull,push,delete"


@pytest.fixture
def pusher(deployment: Deployment) -> httpx.Client:
    return v2(deployment.server, registry_token(deployment.server, deployment.server.token, PUSH))


def test_base_endpoint_challenges_then_accepts_a_token(deployment: Deployment) -> None:
    server = deployment.server
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


def test_repository_request_without_token_names_the_scope(deployment: Deployment) -> None:
    response = httpx.get(f"{deployment.server.url}/v2/bench/tags/list")
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"].endswith(',scope="repository:bench:pull"')
    response = httpx.post(f"{deployment.server.url}/v2/bench/blobs/uploads/")
    assert 'scope="repository:bench:pull,push"' in response.headers["WWW-Authenticate"]


def test_monolithic_upload_then_head_get_and_delete(pusher: httpx.Client) -> None:
    data = b"layer bytes " * 1000
    digest = push_blob(pusher, "bench", data)
    head = pusher.head(f"/bench/blobs/{digest}")
    assert head.status_code == 200
    assert head.headers["Content-Length"] == str(len(data))
    assert head.headers["Docker-Content-Digest"] == digest
    got = pusher.get(f"/bench/blobs/{digest}")
    assert got.content == data
    for wanted, part in (("bytes=5-9", data[5:10]), ("bytes=11990-", data[11990:])):
        partial = pusher.get(f"/bench/blobs/{digest}", headers={"Range": wanted})
        assert partial.status_code == 206
        assert partial.content == part
        assert partial.headers["Content-Range"].endswith(f"/{len(data)}")
    outside = pusher.get(f"/bench/blobs/{digest}", headers={"Range": "bytes=20000-"})
    assert outside.status_code == 416
    assert pusher.delete(f"/bench/blobs/{digest}").status_code == 202
    missing = pusher.get(f"/bench/blobs/{digest}")
    assert missing.status_code == 404
    assert error_code(missing) == "BLOB_UNKNOWN"


def test_wrong_digest_is_refused_and_nothing_is_stored(
    deployment: Deployment, pusher: httpx.Client
) -> None:
    claimed = sha256_digest(b"something else")
    response = pusher.post("/bench/blobs/uploads/", params={"digest": claimed}, content=b"data")
    assert response.status_code == 400
    assert error_code(response) == "DIGEST_INVALID"
    assert pusher.head(f"/bench/blobs/{claimed}").status_code == 404
    assert list((deployment.server.data_dir / "blobs" / "_uploads").iterdir()) == []
    bad = pusher.post("/bench/blobs/uploads/", params={"digest": "md5:abc"}, content=b"x")
    assert error_code(bad) == "DIGEST_INVALID"


def test_chunked_upload_checks_ranges(deployment: Deployment, pusher: httpx.Client) -> None:
    base = deployment.server.url
    started = pusher.post("/bench/blobs/uploads/")
    assert started.status_code == 202
    location = started.headers["Location"]
    assert re.fullmatch(r"/v2/bench/blobs/uploads/[\w.-]+", location)
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
    assert pusher.get(f"/bench/blobs/{sha256_digest(data)}").content == data


def test_upload_sessions_are_bound_to_their_repository(
    deployment: Deployment, pusher: httpx.Client
) -> None:
    with deployment.admin() as admin:
        admin.create_project("acme", "other", "public")
    location = pusher.post("/bench/blobs/uploads/").headers["Location"]
    session = location.rsplit("/", 1)[1]
    token = registry_token(deployment.server, deployment.server.token, "repository:other:push")
    with v2(deployment.server, token) as other:
        foreign = other.patch(f"/other/blobs/uploads/{session}", content=b"x")
    assert foreign.status_code == 404
    assert error_code(foreign) == "BLOB_UPLOAD_UNKNOWN"
    assert pusher.delete(deployment.server.url + location).status_code == 204
    assert pusher.get(deployment.server.url + location).status_code == 404


def test_manifest_by_tag_and_digest_with_tag_pagination(pusher: httpx.Client) -> None:
    digest = push_image(pusher, "bench", "v1", b"layer one")
    for tag in ("v2", "a", "z"):
        manifest = pusher.get(f"/bench/manifests/{digest}").content
        assert pusher.put(
            f"/bench/manifests/{tag}", content=manifest, headers={"Content-Type": OCI_MANIFEST}
        ).is_success
    by_tag = pusher.get("/bench/manifests/v1")
    assert by_tag.headers["Content-Type"] == OCI_MANIFEST
    assert by_tag.headers["Docker-Content-Digest"] == digest
    assert sha256_digest(by_tag.content) == digest
    head = pusher.head(f"/bench/manifests/{digest}")
    assert head.status_code == 200
    assert head.headers["Content-Length"] == str(len(by_tag.content))

    assert pusher.get("/bench/tags/list").json() == {
        "name": "bench",
        "tags": ["a", "v1", "v2", "z"],
    }
    first = pusher.get("/bench/tags/list", params={"n": 2})
    assert first.json()["tags"] == ["a", "v1"]
    assert first.headers["Link"] == '</v2/bench/tags/list?n=2&last=v1>; rel="next"'
    second = pusher.get("/bench/tags/list", params={"n": 2, "last": "v1"})
    assert second.json()["tags"] == ["v2", "z"]

    assert pusher.delete("/bench/manifests/z").status_code == 202
    assert pusher.get("/bench/manifests/z").status_code == 404
    assert pusher.get("/bench/manifests/v1").status_code == 200
    assert pusher.delete(f"/bench/manifests/{digest}").status_code == 202
    gone = pusher.get("/bench/manifests/v1")
    assert gone.status_code == 404
    assert error_code(gone) == "MANIFEST_UNKNOWN"


def test_manifest_needs_its_blobs_and_a_matching_digest(pusher: httpx.Client) -> None:
    manifest = image_manifest(b"{}", [b"never pushed"])
    push_blob(pusher, "bench", b"{}")
    missing = pusher.put(
        "/bench/manifests/v1", content=manifest, headers={"Content-Type": OCI_MANIFEST}
    )
    assert missing.status_code == 400
    assert error_code(missing) == "MANIFEST_BLOB_UNKNOWN"
    wrong = pusher.put(
        f"/bench/manifests/{sha256_digest(b'other')}",
        content=manifest,
        headers={"Content-Type": OCI_MANIFEST},
    )
    assert error_code(wrong) == "DIGEST_INVALID"
    garbage = pusher.put(
        "/bench/manifests/v1", content=b"not json", headers={"Content-Type": OCI_MANIFEST}
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
        "/bench/manifests/multi", content=index, headers={"Content-Type": OCI_INDEX}
    )
    assert error_code(dangling) == "MANIFEST_UNKNOWN"


def test_referrers_list_manifests_by_subject_and_filter_by_artifact_type(
    pusher: httpx.Client,
) -> None:
    subject_digest = push_image(pusher, "bench", "v1", b"the image")
    subject = pusher.get(f"/bench/manifests/{subject_digest}").content
    refs = {}
    for kind in ("application/vnd.example.sbom", "application/vnd.example.signature"):
        refs[kind] = push_image(
            pusher,
            "bench",
            None,
            kind.encode(),
            artifactType=kind,
            subject=descriptor(OCI_MANIFEST, subject),
        )
    listed = pusher.get(f"/bench/referrers/{subject_digest}")
    assert listed.headers["Content-Type"] == OCI_INDEX
    found = {m["artifactType"]: m["digest"] for m in listed.json()["manifests"]}
    assert found == refs
    only = pusher.get(
        f"/bench/referrers/{subject_digest}",
        params={"artifactType": "application/vnd.example.sbom"},
    )
    assert only.headers["OCI-Filters-Applied"] == "artifactType"
    assert [m["digest"] for m in only.json()["manifests"]] == [refs["application/vnd.example.sbom"]]
    none = pusher.get(f"/bench/referrers/{sha256_digest(b'nothing')}")
    assert none.status_code == 200
    assert none.json()["manifests"] == []


def test_slug_and_uuid_name_the_same_repository(deployment: Deployment) -> None:
    with deployment.admin() as admin:
        project_uuid = admin.get_project("bench")["uuid"]
    server = deployment.server
    token = registry_token(server, server.token, f"repository:{project_uuid}:pull,push")
    with v2(server, token) as client:
        digest = push_image(client, project_uuid, "v1", b"by uuid")
    pull = registry_token(server, server.token, "repository:bench:pull")
    with v2(server, pull) as client:
        assert client.get("/bench/manifests/v1").headers["Docker-Content-Digest"] == digest


def test_cross_repository_mount_needs_pull_on_the_source(deployment: Deployment) -> None:
    server = deployment.server
    with deployment.admin() as admin:
        admin.create_project("acme", "copy", "public")
    token = registry_token(server, server.token, PUSH)
    with v2(server, token) as client:
        digest = push_blob(client, "bench", b"shared layer")
    without = registry_token(server, server.token, "repository:copy:pull,push")
    with v2(server, without) as client:
        fallback = client.post("/copy/blobs/uploads/", params={"mount": digest, "from": "bench"})
    assert fallback.status_code == 202  # no pull on bench in this token: a plain session
    both = registry_token(
        server, server.token, "repository:copy:pull,push", "repository:bench:pull"
    )
    with v2(server, both) as client:
        mounted = client.post("/copy/blobs/uploads/", params={"mount": digest, "from": "bench"})
        assert mounted.status_code == 201
        assert mounted.headers["Location"] == f"/v2/copy/blobs/{digest}"
        assert client.get(f"/copy/blobs/{digest}").content == b"shared layer"


def test_token_endpoint_post_form_and_bad_credentials(deployment: Deployment) -> None:
    server = deployment.server
    form = {
        "grant_type": "password",
        "username": "me",
        "password": server.token,
        "scope": "repository:bench:pull",
        "service": "x",
    }
    posted = httpx.post(f"{server.url}/v0/auth/oci/token", data=form)
    assert posted.status_code == 200
    body = posted.json()
    assert body["expires_in"] == 300
    assert body["issued_at"].endswith("Z")
    with v2(server, body["token"]) as client:
        assert client.get("/bench/tags/list").status_code == 200
    refused = httpx.get(
        f"{server.url}/v0/auth/oci/token",
        params={"scope": "repository:bench:pull"},
        auth=("me", "benchrunner_api_" + "0" * 64),
    )
    assert refused.status_code == 401
    assert "password" in refused.json()["message"]
    with v2(server, "not-a-jwt") as client:
        assert client.get("/bench/tags/list").status_code == 401


@pytest.mark.engine_independent
def test_bad_manifest_json_is_a_clear_error(pusher: httpx.Client) -> None:
    body = json.dumps({"schemaVersion": 1}).encode()
    response = pusher.put("/bench/manifests/v1", content=body)
    assert response.status_code == 400
    assert "schemaVersion 2" in response.json()["errors"][0]["message"]


@pytest.mark.engine_independent
def test_nested_names_get_a_spec_error(pusher: httpx.Client) -> None:
    response = pusher.get("/acme/bench/manifests/v1")
    assert response.status_code == 404
    assert error_code(response) == "NAME_UNKNOWN"
    assert "without slashes" in response.json()["errors"][0]["message"]


def test_an_interrupted_chunk_leaves_a_session_that_resumes(
    deployment: Deployment, pusher: httpx.Client
) -> None:
    server = deployment.server
    data = b"a" * 1000 + b"b" * 1000
    location = pusher.post("/bench/blobs/uploads/").headers["Location"]
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
    assert pusher.get(f"/bench/blobs/{sha256_digest(data)}").content == data
    assert "Traceback" not in server.log.read_text()
