"""The registry under hostile input: every malformed name, session id, digest, range or query
value gets a 4xx in the Distribution Spec's error format (never a 500, never a connection closed
without an answer), and open upload sessions are capped and expire.

The tests of refusals share one server per engine, each in a project of its own (``tenant``) and
reading only its own part of the server's log; the caps and expiry, which count every session
on the server and change its settings, start servers of their own."""

from __future__ import annotations

import base64
import json
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.databases import postgres_database
from tests.harness import Deployment, ServerProcess, deploy
from tests.oci_layout import OCI_CONFIG, OCI_MANIFEST, descriptor, sha256_digest
from tests.registry_support import error_code, make_user, push_blob, registry_token, v2

PUSH = "repository:bench:pull,push,delete"
ZERO = "sha256:" + "0" * 64


def raw_request(server: ServerProcess, request: bytes) -> tuple[int, bytes]:
    """Send bytes as they are (httpx refuses some of them) and read the whole answer: its
    status and body. A connection closed without an answer fails the test."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    assert answer, f"connection closed without an answer to {request[:200]!r}"
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body


def http(method: str, target: bytes, token: str | None = None, body: bytes = b"") -> bytes:
    headers = b"Host: 127.0.0.1\r\nConnection: close\r\n"
    if token is not None:
        headers += f"Authorization: Bearer {token}\r\n".encode()
    headers += f"Content-Length: {len(body)}\r\n".encode()
    return method.encode() + b" " + target + b" HTTP/1.1\r\n" + headers + b"\r\n" + body


def spec_error(body: bytes) -> str:
    return str(json.loads(body)["errors"][0]["code"])


def no_traceback(server: ServerProcess, since: int = 0) -> None:
    """No traceback in the server's log after byte ``since`` (where a test sharing the server
    began)."""
    log = server.log_since(since)
    assert "Traceback" not in log, log[-3000:]


@pytest.fixture
def repo(tenant: Deployment) -> str:
    """The test's own repository: its project's slug."""
    return tenant.project


def push_scope(repo: str) -> str:
    return f"repository:{repo}:pull,push,delete"


def route_shapes(name: bytes) -> list[tuple[str, bytes]]:
    """Every /v2/<name>/... route, with the methods each answers."""
    repo = b"/v2/" + name
    session = b"/blobs/uploads/abc." + b"0" * 32
    return [
        *((m, repo + b"/blobs/" + ZERO.encode()) for m in ("GET", "HEAD", "DELETE")),
        *((m, repo + b"/manifests/latest") for m in ("GET", "HEAD", "PUT", "DELETE")),
        ("GET", repo + b"/tags/list"),
        ("GET", repo + b"/referrers/" + ZERO.encode()),
        ("POST", repo + b"/blobs/uploads/"),
        *((m, repo + session) for m in ("PATCH", "PUT", "GET", "DELETE")),
    ]


# Percent-encoded: outside Latin-1, control characters, invalid UTF-8, and plain ASCII that
# the spec's name grammar refuses (upper case, a space, separators at the ends, too long).
INVALID_NAMES = [
    b"%E2%98%83",
    b"b%C3%A9nch",
    b"%00",
    b"a%0Ab",
    b"%0D%0AX-Injected:%201",
    b"%7F",
    b"%FF",
    b"%C3%28",
    b"Bench",
    b"a%20b",
    b"-bench",
    b"bench.",
    b"a" * 256,
]


@pytest.mark.engine_independent
def test_invalid_repository_names_get_name_invalid_on_every_route(
    tenant: Deployment, repo: str
) -> None:
    server = tenant.server
    since = server.log.stat().st_size
    token = registry_token(server, server.token, push_scope(repo))
    for name in INVALID_NAMES:
        for method, target in route_shapes(name):
            for bearer in (None, token):
                status, body = raw_request(server, http(method, target, bearer))
                where = f"{method} {target[:80]!r} token={bearer is not None}"
                assert status == 400, where
                if method != "HEAD":
                    assert spec_error(body) == "NAME_INVALID", where
    no_traceback(server, since)


@pytest.mark.engine_independent
def test_raw_bytes_outside_ascii_in_a_path_are_refused_not_dropped(
    tenant: Deployment, repo: str
) -> None:
    server = tenant.server
    since = server.log.stat().st_size
    token = registry_token(server, server.token, push_scope(repo))
    for name in ("☃".encode(), "bénch".encode(), b"\xff\xfe", b"a\x01b"):
        for method, target in route_shapes(name):
            for bearer in (None, token):
                status, _ = raw_request(server, http(method, target, bearer))
                assert status == 400, f"{method} {target[:80]!r}"
    no_traceback(server, since)


def test_a_well_formed_unknown_name_is_challenged_or_unknown(tenant: Deployment) -> None:
    server = tenant.server
    since = server.log.stat().st_size
    token = registry_token(server, server.token, "repository:no-such.repo__x:pull,push")
    for method, target in route_shapes(b"no-such.repo__x"):
        status, _ = raw_request(server, http(method, target))
        assert status == 401, f"{method} {target!r}"
        status, body = raw_request(server, http(method, target, token))
        assert status == 404, f"{method} {target!r}"
        if method != "HEAD":
            assert spec_error(body) == "NAME_UNKNOWN"
    no_traceback(server, since)


@pytest.mark.engine_independent
def test_token_endpoint_refuses_invalid_scopes_and_malformed_credentials(
    tenant: Deployment,
) -> None:
    server = tenant.server
    since = server.log.stat().st_size
    path = b"/v0/auth/oci/token?service=x&scope=repository:"
    for name in (b"%E2%98%83", b"%00", b"a%0Ab", b"%FF", b"Bench", b"a:b"):
        status, body = raw_request(server, http("GET", path + name + b":pull"))
        assert status == 400, name
        assert "invalid repository name" in json.loads(body)["message"]
    form = b"grant_type=password&scope=repository:a%00b:pull&password=" + server.token.encode()
    status, _ = raw_request(server, http("POST", b"/v0/auth/oci/token", body=form))
    assert status == 400
    scope = b"/v0/auth/oci/token?scope=repository:bench:pull"
    for credentials in (
        b"Basic \xc3\xa9\xc3\xa9",
        b"Basic !!!!",
        b"Basic " + base64.b64encode(b"me:\xff\xfe"),
        b"Basic " + base64.b64encode("me:bencher_é".encode()),
        b"Basic " + base64.b64encode(b"me:" + b"\x00" * 8),
        b"Negotiate abc",
    ):
        request = (
            b"GET " + scope + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
            b"Authorization: " + credentials + b"\r\n\r\n"
        )
        status, _ = raw_request(server, request)
        assert status == 401, credentials
    for bearer in (b"Bearer \xc3\xa9", b"Bearer " + b"\xa0" * 10, b"Basic \xff"):
        request = (
            b"GET /v2/bench/tags/list HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
            b"Authorization: " + bearer + b"\r\n\r\n"
        )
        status, body = raw_request(server, request)
        assert status == 401, bearer
        assert spec_error(body) == "UNAUTHORIZED"
    no_traceback(server, since)


@pytest.mark.engine_independent
def test_malformed_forged_and_foreign_session_ids_are_unknown(
    tenant: Deployment, repo: str
) -> None:
    server = tenant.server
    since = server.log.stat().st_size
    other = f"{repo}-other"
    with tenant.admin() as admin:
        admin.create_project(tenant.org, other, "public", slug=other)
    token = registry_token(server, server.token, push_scope(repo), f"repository:{other}:pull,push")
    with v2(server, token) as client:
        session = client.post(f"/{repo}/blobs/uploads/").headers["Location"].rsplit("/", 1)[1]
        foreign = client.post(f"/{other}/blobs/uploads/").headers["Location"].rsplit("/", 1)[1]
    upload, _, mac = session.rpartition(".")
    flipped = ("1" if mac[0] == "0" else "0") + mac[1:]
    sessions = [
        upload + ".%C3%A9" + mac[2:],  # non-ASCII in the signature
        upload + "%C3%A9." + mac,  # ... in the upload id
        "%E2%98%83." + mac,
        upload + "." + flipped,  # a wrong signature
        upload + "." + mac[:-1],  # a truncated one
        upload + "." + mac.upper(),
        upload + ".",
        "." + mac,
        upload,
        "x" * 5000 + "." + mac,
        "%00." + mac,
        foreign,  # signed for another repository
    ]
    for bad in sessions:
        for method in ("PATCH", "PUT", "GET", "DELETE"):
            target = f"/v2/{repo}/blobs/uploads/{bad}".encode()
            if method == "PUT":
                target += f"?digest={sha256_digest(b'x')}".encode()
            status, body = raw_request(server, http(method, target, token, b"x"))
            assert status == 404, f"{method} {bad[:60]}"
            assert spec_error(body) == "BLOB_UPLOAD_UNKNOWN", f"{method} {bad[:60]}"
    raw = f"/v2/{repo}/blobs/uploads/".encode() + upload.encode() + "é.".encode() + mac.encode()
    for method in ("PATCH", "PUT", "GET", "DELETE"):
        status, _ = raw_request(server, http(method, raw, token))
        assert status == 400
    with v2(server, token) as client:  # the real session is untouched by all this
        assert client.get(f"/{repo}/blobs/uploads/{session}").status_code == 204
    no_traceback(server, since)


@pytest.mark.engine_independent
def test_malformed_digests_ranges_and_query_values_are_4xx(tenant: Deployment, repo: str) -> None:
    server = tenant.server
    since = server.log.stat().st_size
    token = registry_token(server, server.token, push_scope(repo))
    huge = "9" * 5000
    arabic_one = "\u0661"  # a digit to str.isdigit and to re's \d, not to HTTP
    with v2(server, token) as client:
        for digest in ("sha256:" + "é" * 64, "sha256:abc", "md5:abc", "\x00", "sha256:" + "A" * 64):
            for params in ({"digest": digest}, {"mount": digest, "from": repo}):
                refused = client.post(f"/{repo}/blobs/uploads/", params=params)
                assert refused.status_code == 400, params
                assert error_code(refused) == "DIGEST_INVALID"
        for source in ("\x00", "é", "Bench", "a" * 300):
            refused = client.post(f"/{repo}/blobs/uploads/", params={"mount": ZERO, "from": source})
            assert refused.status_code == 400, source
            assert error_code(refused) == "NAME_INVALID"
        location = client.post(f"/{repo}/blobs/uploads/").headers["Location"]
        for content_range in (
            "é".encode(),
            f"{arabic_one}-{arabic_one}".encode(),
            f"0-{huge}".encode(),
            b"0-0/x",
        ):
            refused = client.patch(
                server.url + location, content=b"x", headers={b"Content-Range": content_range}
            )
            assert refused.status_code == 400, content_range
            assert error_code(refused) == "BLOB_UPLOAD_INVALID"
        missing = client.put(server.url + location, params={"digest": "\x00"})
        assert error_code(missing) == "DIGEST_INVALID"
        digest = push_blob(client, repo, b"hello")
        for byte_range in (f"bytes={huge}-", f"bytes=-{huge}", f"bytes={arabic_one}-", "bytes=é"):
            answer = client.get(f"/{repo}/blobs/{digest}", headers={b"Range": byte_range.encode()})
            assert answer.status_code == 416, byte_range
        for params in (
            {"n": "-1"},
            {"n": arabic_one * 2},
            {"n": "1e3"},
            {"last": "\x00"},
            {"last": "é"},
        ):
            refused = client.get(f"/{repo}/tags/list", params=params)
            assert refused.status_code == 400, params
            assert error_code(refused) == "UNSUPPORTED"
        capped = client.get(f"/{repo}/tags/list", params={"n": huge})
        assert capped.status_code == 200
        assert capped.json()["tags"] == []
        for artifact_type in ("\x00", "é/x", "not-a-media-type"):
            refused = client.get(
                f"/{repo}/referrers/{ZERO}", params={"artifactType": artifact_type}
            )
            assert refused.status_code == 400, artifact_type
    no_traceback(server, since)


@pytest.mark.engine_independent
def test_manifests_with_malformed_fields_are_manifest_invalid(
    tenant: Deployment, repo: str
) -> None:
    server = tenant.server
    since = server.log.stat().st_size
    token = registry_token(server, server.token, push_scope(repo))
    with v2(server, token) as client:
        config = push_blob(client, repo, b"{}")
        good: dict[str, Any] = {
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "config": descriptor(OCI_CONFIG, b"{}"),
            "layers": [],
        }
        assert good["config"]["digest"] == config
        bad_descriptor = {"mediaType": "x/y", "digest": "\x00", "size": 1}
        variants = {
            "artifactType NUL": {**good, "artifactType": "a\x00"},
            "artifactType number": {**good, "artifactType": 5},
            "subject NUL": {**good, "subject": bad_descriptor},
            "subject newline": {**good, "subject": {**bad_descriptor, "digest": "sha256:a\nb"}},
            "subject outside Latin-1": {**good, "subject": {**bad_descriptor, "digest": "☃:x"}},
            "layer NUL": {**good, "layers": [bad_descriptor]},
            "mediaType list": {**good, "mediaType": [OCI_MANIFEST]},
            "config mediaType NUL": {
                **good,
                "config": {"mediaType": "\x00", "digest": config, "size": 2},
            },
            "annotations nested": {**good, "annotations": {"a": {"b": 1}}},
            "size true": {**good, "config": {**good["config"], "size": True}},
        }
        for what, manifest in variants.items():
            refused = client.put(
                f"/{repo}/manifests/v1",
                content=json.dumps(manifest).encode(),
                headers={"Content-Type": OCI_MANIFEST},
            )
            assert refused.status_code == 400, what
            assert error_code(refused) == "MANIFEST_INVALID", what
        stored = client.put(
            f"/{repo}/manifests/v1",
            content=json.dumps(good).encode(),
            headers={"Content-Type": OCI_MANIFEST},
        )
        assert stored.status_code == 201, stored.text
    no_traceback(server, since)


# Upload session caps and expiry ------------------------------------------------------------

PER_REPOSITORY, PER_USER = 3, 2


@pytest.fixture
def capped(
    tmp_path: Path, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Deployment]:
    monkeypatch.setenv("BENCHRUNNER_REGISTRY_UPLOADS_PER_REPOSITORY", str(PER_REPOSITORY))
    monkeypatch.setenv("BENCHRUNNER_REGISTRY_UPLOADS_PER_USER", str(PER_USER))
    with deploy(tmp_path, database_url) as deployment:
        yield deployment


def staged_uploads(server: ServerProcess) -> list[Path]:
    return sorted((server.data_dir / "blobs" / "_uploads").iterdir())


def too_many(response: httpx.Response) -> bool:
    return (
        response.status_code == 429
        and error_code(response) == "TOOMANYREQUESTS"
        and int(response.headers["Retry-After"]) > 0
    )


def test_open_sessions_are_capped_per_user_and_per_repository(capped: Deployment) -> None:
    server = capped.server
    with capped.admin() as admin:
        admin.create_project("acme", "other", "public")
    alice = make_user(server, "alice@test.dev", member_of="acme")
    bob = make_user(server, "bob@test.dev", member_of="acme")
    scopes = ("repository:bench:pull,push", "repository:other:pull,push")
    with (
        v2(server, registry_token(server, alice, *scopes)) as as_alice,
        v2(server, registry_token(server, bob, *scopes)) as as_bob,
        v2(server, registry_token(server, server.token, *scopes)) as as_admin,
    ):
        alices = [as_alice.post("/bench/blobs/uploads/") for _ in range(PER_USER)]
        assert [r.status_code for r in alices] == [202] * PER_USER
        assert too_many(as_alice.post("/bench/blobs/uploads/"))
        assert too_many(as_alice.post("/other/blobs/uploads/"))  # the cap is per user
        data = b"monolithic"
        monolithic = as_alice.post(
            "/bench/blobs/uploads/", params={"digest": sha256_digest(data)}, content=data
        )
        assert too_many(monolithic)
        assert as_bob.post("/bench/blobs/uploads/").status_code == 202
        assert too_many(as_admin.post("/bench/blobs/uploads/"))  # bench is full
        assert as_admin.post("/other/blobs/uploads/").status_code == 202
        assert len(staged_uploads(server)) == PER_REPOSITORY + 1  # refused ones left nothing
        # Finishing or cancelling a session frees its place.
        assert as_alice.delete(server.url + alices[0].headers["Location"]).status_code == 204
        done = as_alice.put(
            server.url + alices[1].headers["Location"],
            params={"digest": sha256_digest(data)},
            content=data,
        )
        assert done.status_code == 201, done.text
        assert as_admin.post("/bench/blobs/uploads/").status_code == 202
        assert as_alice.post("/bench/blobs/uploads/").status_code == 202
        assert too_many(as_alice.post("/bench/blobs/uploads/"))  # bench is full again
    no_traceback(server)


def staged_upload(server: ServerProcess, location: str) -> Path:
    """The blob store's file behind a session's Location: its upload id, the signature cut."""
    upload_id = location.rsplit("/", 1)[1].rpartition(".")[0]
    return server.data_dir / "blobs" / "_uploads" / upload_id


def backdate(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_an_idle_session_expires_in_minutes_and_frees_its_place(capped: Deployment) -> None:
    server = capped.server
    token = registry_token(server, server.token, PUSH)
    with v2(server, token) as client:
        first = client.post("/bench/blobs/uploads/").headers["Location"]
        second = client.post("/bench/blobs/uploads/").headers["Location"]
        assert too_many(client.post("/bench/blobs/uploads/"))
        assert client.patch(server.url + second, content=b"kept").status_code == 202
        idle, busy = (staged_upload(server, location) for location in (first, second))
        backdate(idle, 16 * 60)  # the default TTL is 15 minutes
        backdate(busy, 14 * 60)
        for method in ("PATCH", "PUT", "GET", "DELETE"):
            expired = client.request(method, server.url + first, params={"digest": ZERO})
            assert expired.status_code == 404, method
            assert error_code(expired) == "BLOB_UPLOAD_UNKNOWN"
        assert not idle.exists()
        assert client.get(server.url + second).status_code == 204  # a use: idle from now
        third = client.post("/bench/blobs/uploads/")
        assert third.status_code == 202
        # An abandoned session is swept by the next one opened, whoever opens it.
        backdate(busy, 16 * 60)
        member = make_user(server, "carol@test.dev", member_of="acme")
        with v2(server, registry_token(server, member, PUSH)) as other:
            assert other.post("/bench/blobs/uploads/").status_code == 202
        assert not busy.exists()
        assert len(staged_uploads(server)) == 2
    no_traceback(server)


@pytest.fixture
def capped_replicas(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Deployment, ServerProcess]]:
    monkeypatch.setenv("BENCHRUNNER_REGISTRY_UPLOADS_PER_USER", str(PER_USER))
    with postgres_database() as url, deploy(tmp_path, url) as first:
        yield first, first.add_replica("replica-b")


@pytest.mark.postgresql
def test_caps_hold_across_replicas_sharing_the_blob_directory(
    capped_replicas: tuple[Deployment, ServerProcess],
) -> None:
    deployment, replica_b = capped_replicas
    replica_a = deployment.server
    token = registry_token(replica_a, replica_a.token, PUSH)
    with v2(replica_a, token) as on_a, v2(replica_b, token) as on_b:
        assert on_a.post("/bench/blobs/uploads/").status_code == 202
        location = on_b.post("/bench/blobs/uploads/").headers["Location"]
        assert too_many(on_a.post("/bench/blobs/uploads/"))
        assert too_many(on_b.post("/bench/blobs/uploads/"))
        assert on_a.delete(replica_a.url + location).status_code == 204
        assert on_a.post("/bench/blobs/uploads/").status_code == 202
    assert len(staged_uploads(replica_a)) == PER_USER
