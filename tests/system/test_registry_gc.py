"""Registry garbage collection: a deleted manifest's blobs that nothing else references have
their bytes removed; what images still reference stays and pulls back unchanged; a blob pushed
within the grace period and an upload in progress are left alone."""

from __future__ import annotations

import shutil
from pathlib import Path

import httpx
import pytest

from tests.harness import Deployment, deploy, wait_until
from tests.inprocess import InProcessServer, serve_in_process
from tests.metrics_scrape import scrape
from tests.oci_layout import (
    OCI_MANIFEST,
    Image,
    TarEntry,
    busybox_image,
    gzip_bytes,
    sha256_digest,
    tar_bytes,
    write_layout,
)
from tests.registry_support import image_manifest, push_blob
from tests.system.test_registry_skopeo import layout_blobs, pull, push, skopeo

GC_EVERY_ROUND = {"retention-interval": "0.2", "registry-gc-grace": "3"}
"""Rounds all the time; a grace period longer than one push (a grace of 0 would collect a
push's blobs before its manifest arrives, and the manifest would be refused)."""


def _stored(data_dir: Path) -> set[str]:
    """The digests whose bytes the blob store holds."""
    root = data_dir / "blobs" / "oci" / "blobs" / "sha256"
    return {f"sha256:{p.name}" for p in root.iterdir()} if root.exists() else set()


def _rounds(deployment: Deployment) -> float:
    return scrape(deployment.server.url).value("benchrunner_housekeeping_rounds_total")


@pytest.mark.skipif(shutil.which("skopeo") is None, reason="skopeo not installed")
def test_a_deleted_manifests_own_blobs_are_removed_and_the_rest_pulls_back(
    tmp_path: Path, database_url: str
) -> None:
    base = busybox_image()
    extra = gzip_bytes(tar_bytes([TarEntry("extra", b"only in v2")]))
    v1 = write_layout(tmp_path / "v1", [base], tag="v1")
    v2 = write_layout(
        tmp_path / "v2", [Image(layers=[*base.layers, extra], config={"Cmd": ["/v2"]})], "v2"
    )
    only_v2 = {d for d in v2.blobs if d not in v1.blobs and d != v2.digest}  # config, layer
    with deploy(tmp_path, database_url, options=GC_EVERY_ROUND) as deployment:
        creds = f"ci:{deployment.server.token}"
        host = deployment.server.url.removeprefix("http://")
        for layout, ref in ((v1, "bench:v1"), (v2, "bench:v2")):
            pushed = push(deployment, layout.path, ref, creds)
            assert pushed.returncode == 0, pushed.stderr
        data = deployment.server.data_dir
        rounds = _rounds(deployment)
        wait_until(lambda: _rounds(deployment) >= rounds + 2, message="two collections")
        assert only_v2 <= _stored(data)  # referenced: kept

        deleted = skopeo(
            "delete", "--tls-verify=false", f"--creds={creds}", f"docker://{host}/bench:v2"
        )
        assert deleted.returncode == 0, deleted.stderr
        wait_until(lambda: not only_v2 & _stored(data), message="v2's own blobs removed")
        v1_blobs = {d for d in v1.blobs if d != v1.digest}
        assert v1_blobs <= _stored(data)
        back = tmp_path / "back"
        pulled = pull(deployment, "bench:v1", creds, back)
        assert pulled.returncode == 0, pulled.stderr
        assert layout_blobs(back) == layout_blobs(v1.path)
        found = scrape(deployment.server.url)
    assert found.value("benchrunner_registry_gc_blobs_removed_total") == 2
    assert found.value("benchrunner_registry_gc_blob_links_removed_total") == 2
    assert found.value("benchrunner_registry_gc_bytes_removed_total") == sum(
        len(v2.blobs[d]) for d in only_v2
    )
    assert "registry garbage collection unlinked" in deployment.server.log.read_text()


def _registry(server: InProcessServer) -> httpx.Client:
    response = httpx.get(
        f"{server.url}/v0/auth/oci/token",
        params={"service": "benchrunner", "scope": "repository:bench:pull,push,delete"},
        auth=("ci", server.token),
    )
    response.raise_for_status()
    token = response.json()["token"]
    return httpx.Client(
        base_url=f"{server.url}/v2", headers={"Authorization": f"Bearer {token}"}, timeout=30
    )


def _round(server: InProcessServer, seconds: float) -> None:
    housekeeping = server.state("services").housekeeping
    rounds = housekeeping.rounds
    server.clock.advance(seconds)
    wait_until(lambda: housekeeping.rounds > rounds, message="a collection round")


def test_blobs_within_the_grace_period_and_uploads_in_progress_stay(
    tmp_path: Path, database_url: str
) -> None:
    with (
        serve_in_process(
            tmp_path, database_url, retention_interval=60, registry_gc_grace=3600
        ) as server,
        _registry(server) as registry,
    ):
        layer = b"a layer pushed before its manifest"
        digest = push_blob(registry, "bench", layer)
        started = registry.post("/bench/blobs/uploads/")
        assert started.status_code == 202, started.text
        location = started.headers["Location"].removeprefix("/v2")
        patched = registry.patch(location, content=b"half of a layer")
        assert patched.status_code == 202, patched.text
        uploads = tmp_path / "data" / "blobs" / "_uploads"
        staged = set(uploads.iterdir())
        assert staged

        _round(server, 60)  # younger than the grace period: kept
        assert registry.head(f"/bench/blobs/{digest}").status_code == 200
        config = push_blob(registry, "bench", b"{}")
        manifest = image_manifest(b"{}", [layer])

        _round(server, 3600)  # older, and still named by no manifest: collected
        assert registry.head(f"/bench/blobs/{digest}").status_code == 404
        assert digest not in _stored(tmp_path / "data")
        assert set(uploads.iterdir()) == staged  # the upload in progress is untouched
        refused = registry.put(
            f"/bench/manifests/{sha256_digest(manifest)}",
            content=manifest,
            headers={"Content-Type": OCI_MANIFEST},
        )
        assert refused.status_code == 400, refused.text
        assert refused.json()["errors"][0]["code"] == "MANIFEST_BLOB_UNKNOWN"
        push_blob(registry, "bench", layer)  # the client pushes it again
        push_blob(registry, "bench", b"{}")
        stored = registry.put(
            "/bench/manifests/v1", content=manifest, headers={"Content-Type": OCI_MANIFEST}
        )
        assert stored.status_code == 201, stored.text
        _round(server, 3600 + 60)  # referenced now: kept however old
        assert registry.head(f"/bench/blobs/{digest}").status_code == 200
        assert registry.head(f"/bench/blobs/{config}").status_code == 200
