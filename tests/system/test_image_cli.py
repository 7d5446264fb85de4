"""``benchrunner image push`` and ``benchrunner run --image`` through the real CLI."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.harness import Deployment, cli
from tests.oci_layout import (
    busybox_image,
    write_docker_save,
    write_layout,
    write_oci_archive,
)
from tests.registry_support import registry_token, v2

pytestmark = pytest.mark.engine_independent


def cli_env(deployment: Deployment, tmp_path: Path) -> dict[str, str]:
    return {
        "BENCHRUNNER_HOST": deployment.server.url,
        "BENCHRUNNER_TOKEN": deployment.server.token,
        "BENCHRUNNER_PROJECT": deployment.project,
        "BENCHRUNNER_CONFIG": str(tmp_path / "no-config.toml"),
    }


def registry(deployment: Deployment) -> httpx.Client:
    server = deployment.server
    return v2(server, registry_token(server, server.token, "repository:bench:pull"))


def test_image_push_prints_the_digest_and_skips_blobs_it_has(
    deployment: Deployment, tmp_path: Path
) -> None:
    env = cli_env(deployment, tmp_path)
    layout = write_layout(tmp_path / "layout", [busybox_image()], tag="v1")
    first = cli("image", "push", str(layout.path), env=env)
    assert first.stdout.strip() == layout.digest
    with registry(deployment) as client:
        tagged = client.head("/bench/manifests/v1")
        assert tagged.headers["Docker-Content-Digest"] == layout.digest
    again = cli("image", "push", str(layout.path), "--tag", "again", env=env)
    assert again.stdout.strip() == layout.digest
    assert again.stderr.count(": already in the registry") == len(layout.blobs) - 1
    assert "0 blob(s) pushed (0 B), 2 already in the registry" in again.stderr
    assert "2 blob(s) pushed" in first.stderr
    with registry(deployment) as client:
        assert client.get("/bench/tags/list").json()["tags"] == ["again", "v1"]


def test_oci_archive_and_docker_save_tarballs_push(deployment: Deployment, tmp_path: Path) -> None:
    env = cli_env(deployment, tmp_path)
    layout = write_layout(tmp_path / "layout", [busybox_image()], tag="v1")
    archive = write_oci_archive(layout, tmp_path / "image.tar")
    pushed = cli("image", "push", str(archive), "--tag", "archived", "--json", env=env)
    assert f'"digest": "{layout.digest}"' in pushed.stdout
    saved = tmp_path / "saved.tar"
    config = write_docker_save(saved, busybox_image(), repo_tag="bench:saved")
    digest = cli("image", "push", str(saved), env=env).stdout.strip()
    with registry(deployment) as client:
        manifest = client.get("/bench/manifests/saved")
        assert manifest.headers["Docker-Content-Digest"] == digest
        assert manifest.json()["config"]["digest"] == config
        assert client.head(f"/bench/blobs/{config}").status_code == 200


def test_bad_image_path_is_a_clear_error(deployment: Deployment, tmp_path: Path) -> None:
    env = cli_env(deployment, tmp_path)
    (tmp_path / "empty").mkdir()
    for source, message in (
        (str(tmp_path / "missing"), "nothing at that path"),
        (str(tmp_path / "empty"), "not an OCI layout"),
    ):
        result = cli("image", "push", source, env=env, check=False)
        assert result.returncode == 1
        assert message in result.stderr


def test_run_image_stores_a_digest_for_a_tag_or_a_local_path(
    deployment: Deployment, tmp_path: Path
) -> None:
    env = cli_env(deployment, tmp_path)
    layout = write_layout(tmp_path / "layout", [busybox_image()], tag="v1")
    common = ("run", "--spec", deployment.spec, "--adapter", "json", "--json")
    cli(*common, "--image", str(layout.path), env=env)  # pushed by digest, tags untouched
    with registry(deployment) as client:
        assert client.get("/bench/tags/list").json()["tags"] == []
    cli("image", "push", str(layout.path), "--tag", "stable", env=env)
    cli(*common, "--image", "stable", env=env)
    channel = deployment.channel("claimer")
    configs = [channel.claim()["config"] for _ in range(2)]
    assert [config["digest"] for config in configs] == [layout.digest, layout.digest]
    unknown = cli(*common, "--image", "no-such-tag", env=env, check=False)
    assert unknown.returncode == 1
    assert "no image tagged 'no-such-tag' in project 'bench'" in unknown.stderr


def test_multi_platform_layout_pushes_its_index(deployment: Deployment, tmp_path: Path) -> None:
    env = cli_env(deployment, tmp_path)
    arm = busybox_image(architecture="arm64", config={"Cmd": ["/bin/true"]})
    layout = write_layout(tmp_path / "layout", [busybox_image(), arm], tag="multi")
    assert cli("image", "push", str(layout.path), env=env).stdout.strip() == layout.digest
    with registry(deployment) as client:
        index = client.get("/bench/manifests/multi")
        assert index.headers["Content-Type"] == "application/vnd.oci.image.index.v1+json"
        for child in index.json()["manifests"]:
            manifest = client.get(f"/bench/manifests/{child['digest']}").json()
            for blob in [manifest["config"], *manifest["layers"]]:
                assert client.head(f"/bench/blobs/{blob['digest']}").status_code == 200


@pytest.mark.skipif(shutil.which("skopeo") is None, reason="skopeo not installed")
@pytest.mark.parametrize("transport", ["docker-archive", "oci-archive"])
def test_tarballs_written_by_skopeo_push(
    deployment: Deployment, tmp_path: Path, transport: str
) -> None:
    layout = write_layout(tmp_path / "layout", [busybox_image()], tag="v1")
    tarball = tmp_path / "image.tar"
    target = (
        f"{transport}:{tarball}:bench:v1"
        if transport == "docker-archive"
        else f"{transport}:{tarball}:v1"
    )
    subprocess.run(
        ["skopeo", "--insecure-policy", "copy", f"oci:{layout.path}:v1", target],
        check=True,
        capture_output=True,
        timeout=120,
    )
    env = cli_env(deployment, tmp_path)
    digest = cli("image", "push", str(tarball), "--tag", transport, env=env).stdout.strip()
    with registry(deployment) as client:
        manifest = client.get(f"/bench/manifests/{transport}")
        assert manifest.headers["Docker-Content-Digest"] == digest
        for blob in [manifest.json()["config"], *manifest.json()["layers"]]:
            assert client.head(f"/bench/blobs/{blob['digest']}").status_code == 200
