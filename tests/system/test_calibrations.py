"""Calibrations over real HTTP, a real runner and the real CLI, on both engines: a job run
several times unchanged, the proposal per benchmark it gives, the proposal applied as
per-benchmark thresholds, and what is refused (docs/how-to/thresholds-alerts.md)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.databases import ENGINES, fresh_database
from tests.harness import Deployment, cli, deploy, wait_until


@pytest.fixture(scope="module", params=ENGINES)
def shared(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Deployment]:
    tmp = tmp_path_factory.mktemp("calibrations")
    with fresh_database(str(request.param), tmp) as url, deploy(tmp, url) as deployment:
        deployment.runner_process("calibrating", BENCHRUNNER_NOISE_GUARD="false").start()
        with deployment.server.client() as client:
            wait_until(lambda: client.health().waiting_runners == 1, timeout=60)
        yield deployment


@pytest.fixture
def http(shared: Deployment) -> Iterator[httpx.Client]:
    headers = {"Authorization": f"Bearer {shared.server.token}"}
    with httpx.Client(base_url=shared.server.url, headers=headers, timeout=60) as client:
        yield client


def test_the_cli_calibrates_and_applies_a_threshold_per_benchmark(
    shared: Deployment, http: httpx.Client, tmp_path: Path
) -> None:
    env = shared.cli_env(tmp_path)
    done = json.loads(
        cli(
            "calibrate",
            "--spec", shared.spec,
            "--template", "bench.timed",
            "--arg", "ms=5",
            "--runs", "4",
            "--false-alarm-rate", "0.02",
            "--branch", "release",
            "--apply",
            "--json",
            env=env,
            timeout=300,
        ).stdout
    )  # fmt: skip
    assert done["state"] == "done" and done["processed"] == 4, done
    assert done["applied"] is not None and len(done["thresholds"]) == 1
    (entry,) = done["benchmarks"]
    assert (entry["benchmark"], entry["measure"], entry["runs"]) == ("timed", "latency", 4)
    # A 5 ms sleep measured in nanoseconds, with some spread from run to run.
    assert 4e6 < entry["mean"] < 1e9 and entry["cv"] > 0
    assert entry["detectable_change"] > entry["cv"]
    assert entry["proposal"] == {
        "test": "t_test",
        "lower_boundary": 0.99,
        "upper_boundary": 0.99,
        "max_sample_size": 64,
    }
    listed = http.get(
        f"/v0/projects/{shared.project}/thresholds",
        params={"branch": "release", "benchmark": "timed"},
    )
    assert listed.status_code == 200, listed.text
    (threshold,) = listed.json()
    assert threshold["uuid"] == done["thresholds"][0]
    assert threshold["model"]["test"] == "t_test"
    assert threshold["model"]["upper_boundary"] == 0.99
    # The runs reported to a branch of their own: the release branch has no history from them.
    assert done["branch"].startswith("calibration-")
    for run in done["jobs"]:
        report = http.get(f"/v0/projects/{shared.project}/reports/{run['report']}")
        assert report.status_code == 200, report.text
        assert report.json()["branch"]["name"] == done["branch"]
    shown = cli("calibrate", "show", done["uuid"], env=env).stdout
    assert "timed" in shown and "t_test 0.99" in shown and "detectable change" in shown


def test_a_calibration_is_applied_only_when_done(shared: Deployment, http: httpx.Client) -> None:
    with shared.admin() as admin:
        admin.create_spec(
            name="unserved", architecture="x86_64", cpu=1, memory=1 << 30, disk=1 << 30,
            network=False,
        )  # fmt: skip
    path = f"/v0/projects/{shared.project}/calibrations"
    created = http.post(path, json={"spec": "unserved", "template": "bench.noop", "runs": 3})
    assert created.status_code == 201, created.text
    body = created.json()
    assert body["state"] == "running" and len(body["jobs"]) == 3
    assert all(job["status"] == "pending" for job in body["jobs"])
    refused = http.post(f"{path}/{body['uuid']}/apply")
    assert refused.status_code == 409 and "running" in refused.text
    listed = http.get(path)
    assert body["uuid"] in [c["uuid"] for c in listed.json()]


@pytest.mark.parametrize(
    ("body", "status", "says"),
    [
        ({"spec": "small", "runs": 3}, 400, "either template or image"),
        ({"spec": "small", "template": "bench.noop", "image": "x:1", "runs": 3}, 400, "either"),
        ({"spec": "small", "template": "bench.noop", "runs": 2}, 400, "runs"),
        ({"spec": "small", "template": "bench.noop", "false_alarm_rate": 0}, 400, "false_alarm"),
        ({"spec": "small", "template": "bench.missing"}, 400, "bench.missing"),
    ],
)
def test_bad_calibrations_are_refused_saying_why(
    shared: Deployment, http: httpx.Client, body: dict[str, object], status: int, says: str
) -> None:
    answer = http.post(f"/v0/projects/{shared.project}/calibrations", json=body)
    assert answer.status_code == status and says in answer.text, answer.text


def test_an_anonymous_caller_may_not_calibrate(shared: Deployment) -> None:
    with httpx.Client(base_url=shared.server.url, timeout=30) as anonymous:
        answer = anonymous.post(
            f"/v0/projects/{shared.project}/calibrations",
            json={"spec": "small", "template": "bench.noop"},
        )
    assert answer.status_code == 401 and "sign in" in answer.text


def test_a_drift_on_the_spec_after_a_calibration_makes_it_stale(
    shared: Deployment, http: httpx.Client
) -> None:
    """With a drift limit of 0, any later job on the spec finds the machine's speed changed."""
    with shared.admin() as admin:
        admin.create_spec(
            name="drifty", architecture="x86_64", cpu=1, memory=1 << 30, disk=1 << 30,
            noise={"noise_guard": True, "noise_drift_limit": 0.0},
        )  # fmt: skip
    shared.runner_process("drift-watch", specs=["drifty"]).start()
    path = f"/v0/projects/{shared.project}/calibrations"
    created = http.post(path, json={"spec": "drifty", "template": "bench.noop", "runs": 3})
    assert created.status_code == 201, created.text
    calibration = f"{path}/{created.json()['uuid']}"
    done = wait_until(
        lambda: (found := http.get(calibration).json())["state"] == "done" and found,
        timeout=180,
        message="the calibration done",
    )
    assert done["stale"] is None
    # A job measures a drift only when both its calibrations ran: on a loaded machine one may
    # fail (the job then runs unguarded, and says nothing of the speed), so a few jobs are run.
    stale = None
    for _ in range(5):
        later = http.post(
            "/v0/run",
            json={"project": shared.project, "spec": "drifty", "template": "bench.noop"},
        )
        assert later.status_code == 201, later.text
        job = shared.wait_status(later.json()["job"], "processed", "failed", timeout=120)
        report = http.get(f"/v0/projects/{shared.project}/reports/{job.report}").json()
        # Equal medians before and after (whole nanoseconds) are no drift, even at a limit of 0.
        if not (report.get("noise") or {}).get("drift"):
            continue
        stale = wait_until(
            lambda: http.get(calibration).json()["stale"],
            timeout=60,
            message="the calibration stale",
        )
        break
    assert stale is not None, "no later job on the spec measured a drift"
    assert "drifted" in stale and "calibrate again" in stale


def test_a_calibration_refused_part_way_keeps_the_runs_it_has(tmp_path: Path) -> None:
    """A cap of four pending jobs refuses the fifth run: the answer is the cap's 429 and the
    calibration keeps its four runs, so that it can still end."""
    url = f"sqlite:///{tmp_path / 'benchrunner.db'}"
    capped = {"BENCHRUNNER_MAX_PENDING_PER_ORGANIZATION": "4"}
    with deploy(tmp_path, url, env=capped) as deployment:
        headers = {"Authorization": f"Bearer {deployment.server.token}"}
        with httpx.Client(base_url=deployment.server.url, headers=headers, timeout=60) as http:
            path = f"/v0/projects/{deployment.project}/calibrations"
            refused = http.post(path, json={"spec": "small", "template": "bench.noop", "runs": 6})
            assert refused.status_code == 429, refused.text
            (calibration,) = http.get(path).json()
    assert calibration["runs"] == 4 and len(calibration["jobs"]) == 4
    assert calibration["state"] == "running"
