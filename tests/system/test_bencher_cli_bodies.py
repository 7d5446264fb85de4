"""Bencher's CLI, unchanged: every body ``bencher run`` writes in its common forms
(tests/bencher_cli_bodies) is accepted by a real server, and every answer is what Bencher's
CLI reads: its ``JsonReport`` and, for an image job, the ``JsonJob`` it polls
(tests/bencher_schema.py)."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from tests.bencher_bodies import BODIES, bencher_body
from tests.bencher_schema import JsonJob, JsonReport
from tests.harness import Deployment, deploy
from tests.registry_support import push_image, registry_token, v2

pytestmark = pytest.mark.engine_independent

FIXTURES = sorted(BODIES.glob("*.json"))


def _push_v1(deployment: Deployment) -> str:
    server = deployment.server
    token = registry_token(server, server.token, f"repository:{deployment.project}:push")
    with v2(server, token) as client:
        return push_image(client, deployment.project, "v1", b"bench layer")


def _mark_fallback(api: httpx.Client, spec: str) -> dict[str, Any]:
    response = api.patch(f"/v0/specs/{spec}", json={"fallback": True})
    assert response.status_code == 200, response.text
    marked: dict[str, Any] = response.json()
    return marked


def test_every_common_body_is_answered_as_bencher_answers(deployment: Deployment) -> None:
    digest = _push_v1(deployment)
    with deployment.http() as api:
        fallback = _mark_fallback(api, deployment.spec)
        answers: dict[str, dict[str, Any]] = {}
        for path in FIXTURES:
            response = api.post("/v0/run", json=bencher_body(path, deployment))
            assert response.status_code == 201, f"{path.name}: {response.text}"
            JsonReport.model_validate_json(response.text)
            answers[path.stem] = response.json()
        jobs = {
            name: api.get(f"/v0/projects/{deployment.project}/jobs/{answer['job']}")
            for name, answer in answers.items()
            if "job" in answer
        }
        main = api.get(f"/v0/projects/{deployment.project}/branches/main").json()
        feature_thresholds = api.get(
            f"/v0/projects/{deployment.project}/thresholds", params={"branch": "feature-x"}
        ).json()
    assert sorted(jobs) == [
        "40_image_every_flag",
        "45_image_file_in_container",
        "50_image_minimal_detach",
    ]
    for name, response in jobs.items():
        assert response.status_code == 200, f"{name}: {response.text}"
        job = JsonJob.model_validate_json(response.text)
        assert job.spec.os == "linux"
        assert job.spec.uuid == uuid.UUID(fallback["uuid"])
        assert job.config is not None and job.config["digest"] == digest

    rust = answers["10_local_rust_bench"]["results"]
    assert [r["benchmark"]["name"] for r in rust[0]] == ["parse::large", "parse::small"]
    folded, unfolded = answers["20_local_iter_fold"], answers["21_local_iter_no_fold"]
    assert [r[0]["measures"][0]["metric"]["value"] for r in folded["results"]] == [89.5]
    assert len(unfolded["results"]) == 2
    encode = answers["15_local_json"]["results"][0][1]["measures"][0]["metrics"]
    assert {m["name"]: m["value"] for m in encode} == {
        "value": 88.5,
        "lower_value": 85.0,
        "upper_value": 91.25,
    }

    branched = answers["30_thresholds_start_point"]
    assert branched["branch"]["name"] == "feature-x"
    assert branched["branch"]["head"]["start_point"]["branch"] == main["uuid"]
    # a new branch and testbed: the threshold is set, with no history yet to draw limits; as
    # Bencher v0.6.12, the metric's boundary is stored all the same, baseline and limits null
    assert [(t["measure"]["slug"], t["model"]["test"]) for t in feature_thresholds] == [
        ("latency", "t_test")
    ]
    [[encoded]] = branched["results"]
    [judged] = encoded["measures"]
    assert judged["threshold"]["model"]["test"] == "t_test"
    assert judged["boundary"] == {"baseline": None, "lower_limit": None, "upper_limit": None}

    every = jobs["40_image_every_flag"].json()["config"]
    assert every == {
        **every,
        "entrypoint": ["/bin/sh"],
        "cmd": ["-c", "./bench --json > out/results.json"],
        "env": {"BENCH_SIZE": "large", "RUST_LOG": "info"},
        "timeout": 600,
        "file_paths": ["out/results.json"],
        "iter": 3,
        "build_time": True,
        "file_size": True,
        "allow_failure": True,
        "backdate": "2026-01-01T00:00:00Z",
    }
    assert answers["40_image_every_flag"]["start_time"] == "2026-01-01T00:00:00Z"
    # A path inside the image, as ``--file`` names it: the runner reads it in the container.
    in_container = jobs["45_image_file_in_container"].json()["config"]
    assert in_container["file_paths"] == ["/tmp/results.json"]
    minimal = answers["50_image_minimal_detach"]
    assert minimal["project"]["slug"] == deployment.project  # from the image's repository
    alerted = answers["60_local_static_threshold_alert"]["alerts"]
    assert [(a["limit"], a["value"], a["threshold"]["measure"]["slug"]) for a in alerted] == [
        ("upper", 90.0, "latency")
    ]


@pytest.fixture
def sqlite_deployment(tmp_path: Path) -> Iterator[Deployment]:
    """For what does not depend on the engine: the rules below are checked before any
    engine-specific statement runs."""
    with deploy(tmp_path, f"sqlite:///{tmp_path / 'benchrunner.db'}") as deployment:
        yield deployment


UNRESOLVABLE = [
    ({"image": "bench:v1"}, "no fallback spec is marked"),
    ({"image": "bench:v2", "spec": "small"}, "tag 'v2' is not in project 'bench'"),
    ({"image": "ghcr.io/bench:v1", "spec": "small"}, "is not this server"),
    ({"image": "ghcr.io/acme/bench:v1", "spec": "small"}, "must be one name"),
    ({"image": "Bench:v1", "spec": "small"}, "is not a repository name"),
    ({"image": "bench@sha256:abc", "spec": "small"}, "is not sha256:"),
    ({"image": "other:v1", "spec": "small"}, "not found"),
    ({"image": "bench:v1", "spec": "small", "backdate": "yesterday"}, "backdate"),
]


def test_an_image_the_server_cannot_resolve_is_a_clear_400(
    sqlite_deployment: Deployment,
) -> None:
    deployment = sqlite_deployment
    _push_v1(deployment)
    body = {"start_time": "2026-11-25T10:00:00Z", "end_time": "2026-11-25T10:00:00Z"}
    with deployment.http() as api:
        for job, message in UNRESOLVABLE:
            response = api.post("/v0/run", json={**body, "results": [], "job": job})
            assert response.status_code in (400, 404, 422), f"{job}: {response.text}"
            assert message in response.text, job
        assert api.get(f"/v0/projects/{deployment.project}/jobs").json() == []
        # The server by another of its loopback names is still this server.
        port = urlsplit(deployment.server.url).port
        job = {"image": f"localhost:{port}/bench:v1", "spec": "small"}
        accepted = api.post("/v0/run", json={**body, "results": [], "job": job})
        assert accepted.status_code == 201, accepted.text


def test_a_backdated_image_job_reports_its_run_at_the_backdate(
    sqlite_deployment: Deployment,
) -> None:
    deployment = sqlite_deployment
    _push_v1(deployment)
    channel = deployment.channel("backdated")
    with deployment.http() as api:
        submitted = api.post(
            "/v0/run", json=bencher_body(BODIES / "40_image_every_flag.json", deployment)
        )
        assert submitted.status_code == 201, submitted.text
    job_uuid = submitted.json()["job"]
    claimed = channel.claim()
    assert claimed["uuid"] == job_uuid
    assert claimed["config"]["backdate"] == "2026-01-01T00:00:00Z"
    assert channel.ask({"event": "running"})["event"] == "ack"
    stdout = json.dumps({"bench::encode": {"latency": {"value": 88.0}}})
    result = {"exit_code": 0, "stdout": stdout, "stderr": ""}
    done = channel.ask({"event": "completed", "job": job_uuid, "results": [result]})
    assert done == {"event": "ack", "job": job_uuid}
    job = deployment.wait_status(job_uuid, "processed")
    with deployment.admin() as client:
        report = client.get_report(deployment.project, submitted.json()["uuid"])
    start = dt.datetime.fromisoformat(str(report.start_time))
    end = dt.datetime.fromisoformat(str(report.end_time))
    ran = dt.datetime.fromisoformat(str(job.completed)) - dt.datetime.fromisoformat(
        str(job.started)
    )
    assert start == dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    assert end - start == ran


BENCHER_ADAPTERS = (
    *("magic", "json", "json_v0", "c_sharp", "c_sharp_dot_net", "cpp", "cpp_catch2"),
    *("cpp_google", "dart", "dart_benchmark_harness", "go", "go_bench", "java", "java_jmh"),
    *("js", "js_benchmark", "js_time", "js_vitest", "python", "python_asv", "python_pytest"),
    *("ruby", "ruby_benchmark", "rust", "rust_bench", "rust_criterion", "rust_iai"),
    *("rust_gungraun", "rust_gungraun_stdout", "rust_gungraun_json", "rust_iai_callgrind"),
    *("shell", "shell_hyperfine"),
)
"""The names of Bencher's ``Adapter`` (snake case, as its CLI writes ``settings.adapter``),
with the alias it still reads; ``json_v1`` (a parameterized Bencher Metric Format this server
does not read) is left out."""
GUNGRAUN = Path(__file__).parent.parent / "adapter_samples" / "rust_gungraun"


def _local_body(deployment: Deployment, adapter: str, output: str) -> dict[str, Any]:
    body = bencher_body(BODIES / "15_local_json.json", deployment)
    return {**body, "results": [output], "settings": {"adapter": adapter}}


def test_every_adapter_name_bencher_sends_is_accepted(sqlite_deployment: Deployment) -> None:
    deployment = sqlite_deployment
    bmf = json.dumps({"bench::parse": {"latency": {"value": 7.0}}})
    # Console text and JSON summaries in one output: each variant reads its own part.
    gungraun = (GUNGRAUN / "tools.txt").read_text() + (GUNGRAUN / "json_lines.txt").read_text()
    with deployment.http() as api:
        for adapter in BENCHER_ADAPTERS:
            response = api.post("/v0/run", json=_local_body(deployment, adapter, bmf))
            # Accepted by name; a harness that does not read BMF says so about the output.
            assert "is not supported" not in response.text, f"{adapter}: {response.text}"
        read = {
            adapter: api.post("/v0/run", json=_local_body(deployment, adapter, output))
            for adapter, output in (
                ("json_v0", bmf),
                ("rust_gungraun_stdout", gungraun),
                ("rust_gungraun_json", gungraun),
            )
        }
    for adapter, response in read.items():
        assert response.status_code == 201, f"{adapter}: {response.text}"
        JsonReport.model_validate_json(response.text)
    names = {
        adapter: {r["benchmark"]["name"] for r in response.json()["results"][0]}
        for adapter, response in read.items()
    }
    assert names["json_v0"] == {"bench::parse"}
    assert names["rust_gungraun_stdout"] == {"alloc_bench::grow_group::grow_vec cap:1024"}
    assert names["rust_gungraun_json"] == {
        "store_bench::insert_group::insert::small",
        "store_bench::insert_group::insert_many",
    }


def test_a_jobs_spec_is_never_pinned_to_its_testbed_so_spec_reset_has_nothing_to_clear(
    sqlite_deployment: Deployment,
) -> None:
    """Bencher keeps a testbed's current spec (the last one a run named) and takes it for the
    testbed's next image job that names none; ``spec_reset`` clears it. Here each image job
    takes the spec its body names, else the fallback spec: nothing is kept with the testbed,
    so every run is as if it were reset."""
    deployment = sqlite_deployment
    _push_v1(deployment)
    with deployment.admin() as client:
        client.create_spec(
            name="big", architecture="x86_64", cpu=64, memory=1 << 40, disk=1 << 40, network=False
        )
    body = {**bencher_body(BODIES / "50_image_minimal_detach.json", deployment), "testbed": "ci"}
    image = body["job"]

    def spec_of(**more: Any) -> str:
        with deployment.http() as api:
            submitted = api.post("/v0/run", json={**body, **more})
            assert submitted.status_code == 201, submitted.text
            job = api.get(f"/v0/projects/{deployment.project}/jobs/{submitted.json()['job']}")
        slug: str = job.json()["spec"]["slug"]
        return slug

    with deployment.http() as api:
        _mark_fallback(api, deployment.spec)
    assert spec_of(job={**image, "spec": "big"}) == "big"
    assert spec_of() == deployment.spec  # not the testbed's last spec: the fallback
    assert spec_of(spec_reset=True) == deployment.spec
    assert spec_of(job={**image, "spec": "big"}, spec_reset=True) == "big"
