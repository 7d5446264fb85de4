"""The noise guard end to end (docs/decisions/noise.md): a real runner's calibrations reach the
job's output and its report with a verdict under the spec's limits; a noisy report's thresholds
raise no alert unless they ask to, and the report says why; a spec's guard and limits are configured
through the API and the CLI and reach the runner in the job's spec."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from benchrunner.api.jobs import Job
from benchrunner.api.thresholds import ThresholdModelBody
from benchrunner.runner.noise_guard import ROUNDS
from benchrunner.server.store.job_outputs import INLINE_OUTPUT_BYTES
from tests.harness import Deployment, cli, output_json

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
LATENCY_10PCT = {"test": "percentage", "upper_boundary": 0.1, "min_sample_size": 3}


def patch_spec(deployment: Deployment, **fields: Any) -> dict[str, Any]:
    with deployment.http() as client:
        answer = client.patch(f"/v0/specs/{deployment.spec}", json=fields)
    assert answer.status_code == 200, answer.text
    found: dict[str, Any] = answer.json()
    return found


def report_of(deployment: Deployment, job: Job) -> dict[str, Any]:
    with deployment.admin() as client:
        return client.get_report(deployment.project, job.report).model_dump(
            mode="json", exclude_unset=True
        )


@pytest.mark.engine_independent
def test_a_real_runners_noise_reaches_the_output_and_the_report(
    deployment: Deployment, tmp_path: Path
) -> None:
    patch_spec(deployment, noise_cv_limit=1000.0, noise_drift_limit=1000.0)  # always quiet
    runner = deployment.runner_process("calibrating").start()
    job_uuid = deployment.submit("bench.noop")
    job = deployment.wait_status(job_uuid, "processed", timeout=60)

    noise = output_json(job)["noise"]
    assert noise["before"]["rounds"] == noise["after"]["rounds"] == ROUNDS
    assert noise["before"]["median_ns"] > 0 and noise["after"]["median_ns"] > 0
    assert noise["drift"] == noise["after"]["median_ns"] / noise["before"]["median_ns"] - 1
    # Taken while the runner waited (retaken every second), not on the job's way.
    assert 0 <= noise["before_age_ms"] < 10_000

    report = report_of(deployment, job)
    shown = report["noise"]
    assert shown["verdict"] == "quiet" and shown["alerts"] is None
    assert (shown["cv_limit"], shown["drift_limit"]) == (1000.0, 1000.0)
    assert shown["before"] == noise["before"] and shown["drift"] == noise["drift"]
    assert shown["cv"] == max(noise["before"]["cv"], noise["after"]["cv"])
    # The verdict judges the speed spread the runner measured, not the CV.
    assert shown["judged"] == "spread"
    assert shown["spread"] == max(noise["before"]["spread"], noise["after"]["spread"])

    env = deployment.cli_env(tmp_path)
    printed = cli("report", "show", report["uuid"], env=env).stdout
    assert "noise: quiet (spread before" in printed
    assert "noise guard: spread before" in cli("job", "show", job_uuid, env=env).stdout

    # A spec without the guard: its runner's jobs carry no calibration, their reports none.
    patch_spec(deployment, noise_guard=False)
    quiet_uuid = deployment.submit("bench.noop")
    unguarded = deployment.wait_status(quiet_uuid, "processed", timeout=60)
    assert output_json(unguarded).get("noise") is None
    assert report_of(deployment, unguarded)["noise"] is None
    runner.kill()


def history(deployment: Deployment, value: float, minutes: int, **body: Any) -> dict[str, Any]:
    """A direct run on main/ci at ``T0 + minutes``."""
    at = (T0 + dt.timedelta(minutes=minutes)).isoformat()
    payload = {
        "project": deployment.project,
        "branch": "main",
        "testbed": "ci",
        "start_time": at,
        "end_time": at,
        "settings": {"adapter": "json"},
        "results": [json.dumps({"parse": {"latency": {"value": value}}})],
        **body,
    }
    with deployment.http() as client:
        answer = client.post("/v0/run", json=payload)
    assert answer.status_code == 201, answer.text
    found: dict[str, Any] = answer.json()
    return found


def calibration(cv: float, median_ns: int = 40_000) -> dict[str, Any]:
    return {"rounds": 32, "median_ns": median_ns, "cv": cv}


def regression_with_noise(
    deployment: Deployment, runner: str, noise: dict[str, Any], padding: int = 0
) -> dict[str, Any]:
    """A runner job on main/ci whose result is a regression (300 against 100s), completed
    through a raw channel of a new runner ``runner`` with these noise figures; its report once
    processed. ``padding`` (stderr) makes its output a blob, processed in the background by the
    parser pool. A channel of its own: one left silent while the test runs CLI commands would
    outlive the heartbeat timeout on a loaded machine."""
    channel = deployment.channel(runner)
    with deployment.admin() as client:
        submitted = client.run(
            {
                "project": deployment.project,
                "branch": "main",
                "testbed": "ci",
                "spec": deployment.spec,
                "template": "bench.noop",
                "args": {},
                "settings": {"adapter": "json"},
            }
        )
    job_uuid = str(submitted.job)
    assert channel.claim()["uuid"] == job_uuid
    assert channel.ask({"event": "running"})["event"] == "ack"
    stdout = json.dumps({"parse": {"latency": {"value": 300}}})
    done = channel.ask(
        {
            "event": "completed",
            "job": job_uuid,
            "results": [{"exit_code": 0, "stdout": stdout, "stderr": "x" * padding}],
            "noise": noise,
        }
    )
    assert done == {"event": "ack", "job": job_uuid}
    job = deployment.wait_status(job_uuid, "processed")
    return report_of(deployment, job)


def latency_entry(report: dict[str, Any]) -> dict[str, Any]:
    [[bench]] = report["results"]
    [entry] = bench["measures"]
    found: dict[str, Any] = entry
    return found


def test_a_noisy_report_raises_no_alert_unless_its_threshold_asks(
    deployment: Deployment, tmp_path: Path
) -> None:
    patch_spec(deployment, noise_cv_limit=0.02)  # drift: the server's default (5 %)
    history(deployment, 100, 1, thresholds={"models": {"latency": LATENCY_10PCT}})
    for minute in (2, 3, 4):
        history(deployment, 100, minute)
    with deployment.admin() as client:  # judged at once: no confirmation runs
        [threshold] = client.list_thresholds(deployment.project)
        model = ThresholdModelBody.model_validate(LATENCY_10PCT)
        client.update_threshold(deployment.project, threshold.uuid, model, confirm=0)
    noisy = regression_with_noise(
        deployment, "raw-noisy", {"before": calibration(0.041), "after": calibration(0.01)}
    )
    assert noisy["alerts"] == []
    reason = "not judged: noisy (cv 4.1% > limit 2.0%)"
    assert noisy["noise"]["verdict"] == "noisy" and noisy["noise"]["alerts"] == reason
    entry = latency_entry(noisy)
    assert entry["alert"] == reason  # the boundary is drawn; the value is outside it
    assert entry["metric"]["value"] > entry["boundary"]["upper_limit"]
    env = deployment.cli_env(tmp_path)
    printed = cli("report", "show", noisy["uuid"], env=env).stdout
    assert reason in printed and "alert_when_noisy" in printed

    drifted = regression_with_noise(
        deployment,
        "raw-drifted",
        {
            "before": calibration(0.001, 40_000),
            "after": calibration(0.001, 44_000),
            "drift": 0.1,
        },
        padding=INLINE_OUTPUT_BYTES,  # judged by the background processor, not at completion
    )
    assert drifted["alerts"] == []
    assert drifted["noise"]["alerts"] == "not judged: noisy (drift +10.0% > limit 5.0%)"

    quiet = regression_with_noise(
        deployment,
        "raw-quiet",
        {"before": calibration(0.004), "after": calibration(0.006), "drift": 0.01},
    )
    assert quiet["noise"]["verdict"] == "quiet" and "alert" not in latency_entry(quiet)
    [alert] = quiet["alerts"]  # one: the noisy reports before it are not in its look-back
    assert alert["limit"] == "upper" and alert["metric"]["value"] == 300

    with deployment.admin() as client:
        [threshold] = client.list_thresholds(deployment.project)
    assert threshold.alert_when_noisy is False
    cli(
        "threshold",
        "update",
        threshold.uuid,
        "--test",
        "percentage",
        "--upper-boundary",
        "0.1",
        "--min-sample-size",
        "3",
        "--alert-when-noisy",
        env=env,
    )
    asked = regression_with_noise(
        deployment, "raw-asked", {"before": calibration(0.041), "after": calibration(0.01)}
    )
    assert asked["noise"]["verdict"] == "noisy"
    # Its own alert, and the look-back's: with the noisy reports in the series now, the step
    # began at the first of them, which no alert was on.
    [alert] = [a for a in asked["alerts"] if a["report"] == asked["uuid"]]
    assert alert["metric"]["value"] == 300 and alert["change"] is None
    [step] = [a for a in asked["alerts"] if a["report"] != asked["uuid"]]
    assert step["report"] == noisy["uuid"] and step["change"]["after"] == 300
    assert latency_entry(asked)["threshold"]["alert_when_noisy"] is True
    assert "alert" not in latency_entry(asked)


def test_a_specs_noise_settings_round_trip_and_reach_the_runner(
    deployment: Deployment, tmp_path: Path
) -> None:
    with deployment.http() as client:
        created = client.post(
            "/v0/specs",
            json={
                "name": "quiet",
                "architecture": "x86_64",
                "cpu": 1,
                "memory": 1024,
                "disk": 1024,
                "noise_cv_limit": 0.01,
            },
        )
        assert created.status_code == 201, created.text
        spec = created.json()
        assert (spec["noise_guard"], spec["noise_cv_limit"], spec["noise_drift_limit"]) == (
            True,
            0.01,
            None,
        )
        for bad in ({"noise_cv_limit": -0.1}, {"noise_drift_limit": "high"}, {"noise_guard": 3}):
            refused = client.patch("/v0/specs/quiet", json=bad)
            assert refused.status_code in (400, 422), refused.text
            assert next(iter(bad)) in refused.text
        assert client.get("/v0/specs/quiet").json() == spec  # nothing changed by a refusal

    env = deployment.cli_env(tmp_path)
    cli(
        "spec",
        "noise",
        "quiet",
        "--no-noise-guard",
        "--noise-drift-limit",
        "0.03",
        env=env,
    )
    shown = json.loads(cli("spec", "show", "quiet", "--json", env=env).stdout)
    assert (shown["noise_guard"], shown["noise_cv_limit"], shown["noise_drift_limit"]) == (
        False,
        0.01,
        0.03,
    )
    printed = cli("spec", "show", "quiet", env=env).stdout
    assert "noise drift limit" in printed and "3%" in printed
    cli("spec", "noise", "quiet", "--default-limits", env=env)
    with deployment.admin() as client:
        reset = client.get_spec("quiet")
    assert (reset.noise_cv_limit, reset.noise_drift_limit) == (None, None)

    channel = deployment.channel("quiet-runner", specs=["quiet"])
    with deployment.admin() as client:
        submitted = client.run(
            {
                "project": deployment.project,
                "spec": "quiet",
                "template": "bench.noop",
                "args": {},
                "settings": {"adapter": "json"},
            }
        )
    claimed = channel.claim()
    assert claimed["uuid"] == str(submitted.job)
    assert claimed["spec"]["noise_guard"] is False
    assert claimed["spec"].get("noise_cv_limit") is None  # the server's default
