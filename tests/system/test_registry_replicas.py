"""The registry across server replicas sharing one PostgreSQL database and one blob directory:
an upload started on one replica continues and completes on another."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.databases import postgres_database
from tests.harness import Deployment, ServerProcess, deploy
from tests.oci_layout import busybox_image, sha256_digest, write_layout
from tests.registry_support import registry_token, v2

pytestmark = pytest.mark.postgresql


@pytest.fixture
def two_replicas(tmp_path: Path) -> Iterator[tuple[Deployment, ServerProcess]]:
    with postgres_database() as url, deploy(tmp_path, url) as first:
        yield first, first.add_replica("replica-b")


def test_an_upload_session_moves_between_replicas(
    two_replicas: tuple[Deployment, ServerProcess],
) -> None:
    deployment, replica_b = two_replicas
    replica_a = deployment.server
    # A token from one replica is good on the other: they share the secret key.
    token = registry_token(replica_a, replica_a.token, "repository:bench:pull,push")
    data = b"first half|" + b"second half"
    with v2(replica_a, token) as on_a, v2(replica_b, token) as on_b:
        location = on_a.post("/bench/blobs/uploads/").headers["Location"]
        first = on_a.patch(replica_a.url + location, content=data[:11])
        assert first.status_code == 202
        location = first.headers["Location"]
        second = on_b.patch(
            replica_b.url + location,
            content=data[11:],
            headers={"Content-Range": f"11-{len(data) - 1}"},
        )
        assert second.status_code == 202, second.text
        done = on_a.put(
            replica_a.url + second.headers["Location"], params={"digest": sha256_digest(data)}
        )
        assert done.status_code == 201, done.text
        assert on_b.get(f"/bench/blobs/{sha256_digest(data)}").content == data


@pytest.mark.skipif(shutil.which("skopeo") is None, reason="skopeo not installed")
def test_pushed_through_one_replica_pulled_through_another(
    two_replicas: tuple[Deployment, ServerProcess], tmp_path: Path
) -> None:
    deployment, replica_b = two_replicas
    layout = write_layout(tmp_path / "src", [busybox_image()], tag="v1")
    creds = f"ci:{deployment.server.token}"
    for server, direction in ((deployment.server, "push"), (replica_b, "pull")):
        host = server.url.removeprefix("http://")
        remote = f"docker://{host}/bench:v1"
        local = f"oci:{tmp_path / direction}:v1"
        argv = (
            ["--dest-tls-verify=false", f"--dest-creds={creds}", f"oci:{layout.path}:v1", remote]
            if direction == "push"
            else ["--src-tls-verify=false", f"--src-creds={creds}", remote, local]
        )
        result = subprocess.run(
            ["skopeo", "--insecure-policy", "copy", *argv],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert result.returncode == 0, result.stderr
    assert (tmp_path / "pull" / "index.json").read_text().count(layout.digest) == 1
