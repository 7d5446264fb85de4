"""The registry's own body limit: layers above the API's request limit pass, above its own fail."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness import Deployment, deploy
from tests.oci_layout import sha256_digest
from tests.registry_support import error_code, push_blob, registry_token, v2

API_LIMIT = 64 * 1024
REGISTRY_LIMIT = 1024 * 1024


@pytest.fixture
def small_limits(
    tmp_path: Path, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Deployment]:
    monkeypatch.setenv("BENCHRUNNER_REGISTRY_MAX_BODY_BYTES", str(REGISTRY_LIMIT))
    with deploy(tmp_path, database_url, request_body_max_bytes=API_LIMIT) as deployment:
        yield deployment


def test_blob_limit_is_the_registrys_not_the_apis(small_limits: Deployment) -> None:
    server = small_limits.server
    token = registry_token(server, server.token, "repository:bench:pull,push")
    with v2(server, token) as client:
        layer = b"x" * (REGISTRY_LIMIT // 2)
        assert client.get(f"/bench/blobs/{push_blob(client, 'bench', layer)}").content == layer
        too_big = b"y" * (REGISTRY_LIMIT + 1)
        refused = client.post(
            "/bench/blobs/uploads/", params={"digest": sha256_digest(too_big)}, content=too_big
        )
        assert refused.status_code == 413
        assert error_code(refused) == "SIZE_INVALID"
        location = client.post("/bench/blobs/uploads/").headers["Location"]
        half = b"z" * (REGISTRY_LIMIT // 2 + 1)
        assert client.patch(server.url + location, content=half).status_code == 202
        over = client.patch(server.url + location, content=half)
        assert over.status_code == 413
        assert error_code(over) == "SIZE_INVALID"
        assert client.get(server.url + location).status_code == 404  # the upload was dropped
