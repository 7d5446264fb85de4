"""Image jobs end to end: a real server, a runner started with ``--executor sandbox``, runc.

Images are pushed with skopeo to the server's own ``/v2/`` registry and pulled from it by the
runner with the job's OCI token.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.bencher_bodies import BODIES, bencher_body
from tests.harness import Deployment, output_json
from tests.oci_layout import busybox_image, write_layout

pytestmark = [
    pytest.mark.engine_independent,
    pytest.mark.system,
    pytest.mark.skipif(
        os.geteuid() != 0 or shutil.which("runc") is None, reason="needs root and runc"
    ),
    pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs a core for the job"),
]

RESULT = {"sandboxed": {"latency": {"value": 42.0}}}
SIDES = ("baseline", "contender")


def sandbox_runner(deployment: Deployment, name: str) -> Path:
    sandbox_dir = deployment.tmp / f"sandbox-{name}"
    deployment.runner_process(
        name, BENCHRUNNER_EXECUTOR="sandbox", BENCHRUNNER_SANDBOX_DIR=str(sandbox_dir)
    ).start()
    return sandbox_dir


def skopeo(*args: str) -> None:
    subprocess.run(["skopeo", *args], check=True, capture_output=True, timeout=120)


def repository(deployment: Deployment, project: str) -> str:
    """The project's repository in the server's registry, as skopeo names it."""
    return f"docker://{deployment.server.url.removeprefix('http://')}/{project}"


def push(deployment: Deployment, layout: Path, tag: str, project: str) -> None:
    source = f"oci:{layout}:{tag}"
    target = f"{repository(deployment, project)}:{tag}"
    credentials = f"admin:{deployment.server.token}"
    skopeo(
        "copy", "--quiet", "--dest-tls-verify=false", "--dest-creds", credentials, source, target
    )


def project_uuid(deployment: Deployment) -> str:
    with deployment.admin() as client:
        return str(client.get_project(deployment.project).uuid)


def submit_image(deployment: Deployment, digest: str, **job: object) -> str:
    body = {
        "project": deployment.project,
        "spec": deployment.spec,
        "image": digest,
        "settings": {"adapter": "json"},
        "job": {"timeout": 60, **job},
    }
    with deployment.admin() as client:
        return str(client.run(body).job)


def test_an_image_pushed_with_skopeo_runs_in_the_sandbox(deployment: Deployment) -> None:
    script = f"echo '{json.dumps(RESULT)}' | tee result.json"
    image = busybox_image({"Entrypoint": ["/bin/sh", "-c"], "Cmd": [script], "WorkingDir": "/tmp"})
    layout = write_layout(deployment.tmp / "layout", [image])
    push(deployment, layout.path, layout.tag, project_uuid(deployment))
    sandbox_dir = sandbox_runner(deployment, "sandboxed")

    first = submit_image(deployment, layout.digest, file_paths=["result.json"])
    job = deployment.wait_status(first, "processed", "completed", "failed", timeout=120)
    assert job.status in ("processed", "completed"), job
    result = output_json(job)["results"][0]
    assert json.loads(result["stdout"]) == RESULT
    assert json.loads(result["output"]["result.json"]) == RESULT

    blobs = _files(sandbox_dir / "images" / "blobs" / "sha256")
    assert blobs
    second = submit_image(deployment, layout.digest)
    job = deployment.wait_status(second, "processed", "completed", "failed", timeout=120)
    assert job.status in ("processed", "completed"), job
    # The second job downloaded nothing: the same blobs, untouched (a fetch again would have
    # renamed a new file over each: a new inode).
    assert _files(sandbox_dir / "images" / "blobs" / "sha256") == blobs


def _files(directory: Path) -> list[tuple[str, int, int]]:
    return sorted((p.name, p.stat().st_ino, p.stat().st_mtime_ns) for p in directory.iterdir())


def test_bencher_files_inside_the_image_are_read_from_the_containers_root(
    deployment: Deployment,
) -> None:
    """``bencher run --image <project>:v1 --adapter json --file /tmp/results.json``, in the body
    Bencher's CLI sends: the path names a file in the container's root, where the image wrote
    it. Two more ``--file`` paths are symlinks the container made towards a file of the host:
    one climbing out of the root with ``..`` (refused), one absolute (resolved in the container's
    root, where that host path does not exist); the report names each, the results file is
    still read."""
    host_file = deployment.tmp / "host-secret"
    host_file.write_text(json.dumps({"host": {"latency": {"value": 1.0}}}))
    climb = "../" * 16
    script = (
        f"echo '{json.dumps(RESULT)}' > /tmp/results.json; echo ran; "
        f"ln -s {climb}{host_file} /tmp/climbing; ln -s {host_file} /tmp/absolute"
    )
    image = busybox_image({"Entrypoint": ["/bin/sh", "-c"], "Cmd": [script]})
    layout = write_layout(deployment.tmp / "layout", [image], tag="v1")
    push(deployment, layout.path, layout.tag, deployment.project)
    sandbox_runner(deployment, "bencher")
    body = bencher_body(BODIES / "45_image_file_in_container.json", deployment)
    body["job"]["file_paths"] += ["/tmp/climbing", "/tmp/absolute"]
    with deployment.http() as api:
        submitted = api.post("/v0/run", json=body)
    assert submitted.status_code == 201, submitted.text

    job = deployment.wait_status(submitted.json()["job"], "processed", "failed", timeout=120)
    assert job.status == "processed", job
    (result,) = output_json(job)["results"]
    assert result["stdout"] == "ran\n"  # not BMF: the metric can only come from the file
    assert result["output"] == {"/tmp/results.json": json.dumps(RESULT) + "\n"}
    root = "the container's root"
    assert result["stderr"] == (
        f"[benchrunner: file_path '/tmp/climbing' refused: '..' on its path leaves {root}]\n"
        "[benchrunner: file_path '/tmp/absolute' not found]\n"
    )
    with deployment.admin() as client:
        report = client.get_report(deployment.project, submitted.json()["uuid"])
    ((found,),) = report.results
    assert found.benchmark.name == "sandboxed"
    assert [(m.measure.slug, m.metric.value) for m in found.measures] == [("latency", 42.0)]


def test_an_image_missing_from_the_registry_fails_the_job_clearly(
    deployment: Deployment,
) -> None:
    project = project_uuid(deployment)
    # The server checks the image at submission: delete it between submission and pull.
    layout = write_layout(deployment.tmp / "layout", [busybox_image()])
    push(deployment, layout.path, layout.tag, project)
    digest = layout.digest
    job_uuid = submit_image(deployment, digest)
    credentials = f"admin:{deployment.server.token}"
    image = f"{repository(deployment, project)}@{digest}"
    skopeo("delete", "--tls-verify=false", "--creds", credentials, image)
    sandbox_runner(deployment, "sandboxed")
    job = deployment.wait_status(job_uuid, "failed", timeout=60)
    assert output_json(job)["error"] == (
        f"image {digest}: {project}/manifests/{digest}: not found in the registry"
    )


def test_a_sandbox_runner_refuses_template_jobs_clearly(deployment: Deployment) -> None:
    sandbox_runner(deployment, "sandboxed")
    job_uuid = deployment.submit("bench.noop")
    job = deployment.wait_status(job_uuid, "failed", timeout=60)
    assert "runs image jobs only" in output_json(job)["error"]


@pytest.mark.parametrize("named_by", ["digest", "tag"])
def test_a_duet_of_two_images_runs_both_in_the_sandbox(
    deployment: Deployment, named_by: str
) -> None:
    # By tag, each side is resolved to its digest at submission, as a job's image is.
    project = project_uuid(deployment)
    digests = []
    for name, value in zip(SIDES, (100.0, 200.0), strict=True):
        script = f"echo '{json.dumps({'duet': {'latency': {'value': value}}})}'"
        image = busybox_image({"Entrypoint": ["/bin/sh", "-c"], "Cmd": [script]})
        layout = write_layout(deployment.tmp / f"layout-{name}", [image], tag=name)
        push(deployment, layout.path, layout.tag, project)
        digests.append(layout.digest)
    sandbox_dir = sandbox_runner(deployment, "duet")
    baseline, contender = (
        digests if named_by == "digest" else [f"{deployment.project}:{n}" for n in SIDES]
    )
    body = {
        "project": deployment.project,
        "spec": deployment.spec,
        "baseline": {"image": baseline},
        "contender": {"image": contender},
        "duet": {"seed": 3, "resamples": 500},
        "settings": {"adapter": "json"},
        "job": {"timeout": 120, "iter": 2},
    }
    with deployment.admin() as client:
        job_uuid = str(client.run(body).job)
    job = deployment.wait_status(job_uuid, "processed", "failed", timeout=180)
    assert job.status == "processed", job
    duet = job.config.duet
    assert duet is not None
    assert [duet.baseline.digest, duet.contender.digest] == digests
    sides = [(r["side"], json.loads(r["stdout"])["duet"]["latency"]["value"]) for r in
             output_json(job)["results"]]  # fmt: skip
    assert sorted(sides) == [("baseline", 100.0)] * 2 + [("contender", 200.0)] * 2
    with deployment.admin() as client:
        report = client.get_report(deployment.project, job.report)
    assert report.duet is not None
    (found,) = report.duet.results
    assert found.ratio == pytest.approx(2.0)
    assert found.alert is not None
    assert found.alert.limit == "upper" and found.alert.status == "active"
    assert list((sandbox_dir / "jobs").iterdir()) == []  # both sides' directories removed
