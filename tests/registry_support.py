"""Registry test support: users with API tokens, registry tokens, and raw /v2/ requests."""

from __future__ import annotations

from typing import Any

import httpx
from sqlalchemy.engine import Connection

from benchrunner.core.clock import utcnow
from benchrunner.server.store import accounts
from benchrunner.server.store.engine import Database
from tests.harness import ServerProcess
from tests.memberships import add_member
from tests.oci_layout import OCI_CONFIG, OCI_MANIFEST, canonical, descriptor, sha256_digest


def make_user(server: ServerProcess, email: str, member_of: str | None = None) -> str:
    """A non-admin user (a member of organization ``member_of`` if given); its API token."""
    db = Database(server.db, read_threads=1)
    try:

        def unit(conn: Connection) -> str:
            now = utcnow()
            user = accounts.user_get_or_create(
                conn, email, email.split("@")[0], admin=False, now=now
            )
            if member_of is not None:
                add_member(conn, user.id, member_of, now)
            return accounts.api_token_issue(conn, user.id, "test", now)

        return db.write_sync(unit)
    finally:
        db.close()


def registry_token(server: ServerProcess, api_token: str | None, *scopes: str) -> str:
    """Run the Docker token flow: Basic credentials (or none) for a registry JWT."""
    auth = ("anyone", api_token) if api_token else None
    response = httpx.get(
        f"{server.url}/v0/auth/oci/token",
        params=[("service", "benchrunner"), *(("scope", s) for s in scopes)],
        auth=auth,
    )
    response.raise_for_status()
    body: dict[str, Any] = response.json()
    assert body["token"] == body["access_token"]
    return str(body["token"])


def v2(server: ServerProcess, token: str | None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=f"{server.url}/v2", headers=headers, timeout=30)


def error_code(response: httpx.Response) -> str:
    return str(response.json()["errors"][0]["code"])


def push_blob(client: httpx.Client, repo: str, data: bytes) -> str:
    digest = sha256_digest(data)
    response = client.post(f"/{repo}/blobs/uploads/", params={"digest": digest}, content=data)
    assert response.status_code == 201, response.text
    return digest


def image_manifest(config: bytes, layers: list[bytes], **extra: object) -> bytes:
    return canonical(
        {
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "config": descriptor(OCI_CONFIG, config),
            "layers": [descriptor("application/vnd.oci.image.layer.v1.tar", x) for x in layers],
            **extra,
        }
    )


def push_image(
    client: httpx.Client, repo: str, tag: str | None, layer: bytes, **extra: object
) -> str:
    """Push a one-layer image; by digest when ``tag`` is None. Its manifest digest."""
    config, manifest = b"{}", image_manifest(b"{}", [layer], **extra)
    push_blob(client, repo, config)
    push_blob(client, repo, layer)
    response = client.put(
        f"/{repo}/manifests/{tag or sha256_digest(manifest)}",
        content=manifest,
        headers={"Content-Type": OCI_MANIFEST},
    )
    assert response.status_code == 201, response.text
    assert response.headers["Docker-Content-Digest"] == sha256_digest(manifest)
    return sha256_digest(manifest)
