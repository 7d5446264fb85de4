"""A real client, skopeo, pushes OCI layouts to the registry and pulls them back unchanged."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.harness import Deployment
from tests.oci_layout import Image, TarEntry, busybox_image, gzip_bytes, tar_bytes, write_layout
from tests.registry_support import make_user

pytestmark = pytest.mark.skipif(shutil.which("skopeo") is None, reason="skopeo not installed")


def skopeo(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["skopeo", "--insecure-policy", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def push(
    deployment: Deployment, layout: Path, ref: str, creds: str, *more: str
) -> subprocess.CompletedProcess[str]:
    host = deployment.server.url.removeprefix("http://")
    return skopeo(
        "copy",
        "--dest-tls-verify=false",
        f"--dest-creds={creds}",
        *more,
        f"oci:{layout}",
        f"docker://{host}/{ref}",
    )


def pull(
    deployment: Deployment, ref: str, creds: str, layout: Path, *more: str
) -> subprocess.CompletedProcess[str]:
    host = deployment.server.url.removeprefix("http://")
    return skopeo(
        "copy",
        "--src-tls-verify=false",
        f"--src-creds={creds}",
        *more,
        f"docker://{host}/{ref}",
        f"oci:{layout}",
    )


def layout_blobs(layout: Path) -> dict[str, str]:
    """Every blob of a layout by file name -> its sha256, read back from disk."""
    return {
        path.name: hashlib.sha256(path.read_bytes()).hexdigest()
        for path in (layout / "blobs" / "sha256").iterdir()
    }


def top_digest(layout: Path) -> str:
    return str(json.loads((layout / "index.json").read_text())["manifests"][0]["digest"])


def test_pushed_image_pulls_back_byte_identical(deployment: Deployment, tmp_path: Path) -> None:
    source = write_layout(tmp_path / "src", [busybox_image()], tag="v1")
    creds = f"ci:{deployment.server.token}"
    pushed = push(deployment, source.path, "bench:v1", creds)
    assert pushed.returncode == 0, pushed.stderr
    back = tmp_path / "back"
    pulled = pull(deployment, "bench:v1", creds, back, "--dest-oci-accept-uncompressed-layers")
    assert pulled.returncode == 0, pulled.stderr
    assert top_digest(back) == source.digest
    assert layout_blobs(back) == layout_blobs(source.path)
    host = deployment.server.url.removeprefix("http://")
    inspected = skopeo(
        "inspect", "--tls-verify=false", f"--creds={creds}", f"docker://{host}/bench:v1"
    )
    assert inspected.returncode == 0, inspected.stderr
    assert json.loads(inspected.stdout)["Digest"] == source.digest


def test_multi_platform_index_round_trips(deployment: Deployment, tmp_path: Path) -> None:
    arm = Image(layers=[gzip_bytes(tar_bytes([TarEntry("arch", b"arm64")]))], architecture="arm64")
    source = write_layout(tmp_path / "src", [busybox_image(), arm], tag="multi")
    creds = f"ci:{deployment.server.token}"
    pushed = push(deployment, source.path, "bench:multi", creds, "--all")
    assert pushed.returncode == 0, pushed.stderr
    back = tmp_path / "back"
    pulled = pull(deployment, "bench:multi", creds, back, "--all")
    assert pulled.returncode == 0, pulled.stderr
    assert top_digest(back) == source.digest
    assert layout_blobs(back) == layout_blobs(source.path)


def test_private_project_and_wrong_token_are_refused(
    deployment: Deployment, tmp_path: Path
) -> None:
    with deployment.admin() as admin:
        admin.create_project("acme", "secret", "private")
    source = write_layout(tmp_path / "src", [busybox_image()], tag="v1")
    owner = f"ci:{deployment.server.token}"
    assert push(deployment, source.path, "secret:v1", owner).returncode == 0
    outsider = f"x:{make_user(deployment.server, 'outsider@test.dev')}"
    refused = pull(deployment, "secret:v1", outsider, tmp_path / "stolen")
    assert refused.returncode != 0
    assert not (tmp_path / "stolen" / "index.json").exists()
    wrong = f"ci:benchrunner_api_{'0' * 64}"
    rejected = push(deployment, source.path, "bench:v1", wrong)
    assert rejected.returncode != 0
    assert "401" in rejected.stderr or "unauthorized" in rejected.stderr.lower()


def test_list_tags_and_delete(deployment: Deployment, tmp_path: Path) -> None:
    source = write_layout(tmp_path / "src", [busybox_image()], tag="v1")
    creds = f"ci:{deployment.server.token}"
    for tag in ("v1", "v2"):
        assert push(deployment, source.path, f"bench:{tag}", creds).returncode == 0
    host = deployment.server.url.removeprefix("http://")
    listed = skopeo("list-tags", "--tls-verify=false", f"--creds={creds}", f"docker://{host}/bench")
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout)["Tags"] == ["v1", "v2"]
    deleted = skopeo(
        "delete", "--tls-verify=false", f"--creds={creds}", f"docker://{host}/bench:v1"
    )
    assert deleted.returncode == 0, deleted.stderr
    listed = skopeo("list-tags", "--tls-verify=false", f"--creds={creds}", f"docker://{host}/bench")
    assert json.loads(listed.stdout)["Tags"] == []  # by digest: every tag of that manifest goes
