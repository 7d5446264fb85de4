"""Duet runs through a real server and a real runner process: two argument sets of one
template interleaved in one job, paired by the server into a ratio with an interval."""

from __future__ import annotations

from typing import Any

import pytest

from benchrunner.core.duet_order import order_text, run_sequence
from tests.harness import Deployment, cli

SEED = 42
ROUNDS = 8


def _duet_body(deployment: Deployment, **overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "project": deployment.project,
        "spec": deployment.spec,
        "template": "bench.timed",
        "baseline": {"args": {"ms": 10}},
        "contender": {"args": {"ms": 30}},
        "duet": {"seed": SEED, "margin": 0.05, "resamples": 2000},
        "job": {"iter": ROUNDS},
        "settings": {"adapter": "json"},
    }
    body.update(overrides)
    return body


def test_a_slower_contender_gives_a_ratio_above_one_and_an_alert(deployment: Deployment) -> None:
    deployment.runner_process("r1").start()
    with deployment.admin() as client:
        submitted = client.run(_duet_body(deployment))
    job = deployment.wait_status(submitted["job"], "processed", timeout=90)

    expected = run_sequence(SEED, ROUNDS)
    results = job["output"]["results"]
    assert [(r["round"], r["side"]) for r in results] == expected
    assert all(r["exit_code"] == 0 for r in results)
    assert job["config"]["duet"]["seed"] == SEED

    with deployment.admin() as client:
        report = client.get_report(deployment.project, job["report"])
    assert report["error"] is None
    assert report["results"] == []  # no absolute metric: the perf history stays clean
    duet = report["duet"]
    assert duet["order"] == order_text(expected)
    assert (duet["seed"], duet["rounds"], duet["resamples"]) == (SEED, ROUNDS, 2000)
    assert duet["confidence"] == 0.95 and duet["margin"] == 0.05
    assert "bootstrap" in duet["method"]
    (found,) = duet["results"]
    assert (found["benchmark"]["name"], found["measure"]["slug"]) == ("timed", "latency")
    assert found["rounds"] == ROUNDS
    assert 1.05 < found["lower_value"] < found["ratio"] < found["upper_value"]
    assert found["alert"] == {"limit": "upper"}
    assert duet["alerts"] == 1

    # The CLI: `report show` prints the duet apart, and a duet submitted with `run --baseline
    # --contender --wait --err` fails the step on its alert.
    env = deployment.cli_env(deployment.tmp)
    shown = cli("report", "show", job["report"], env=env).stdout
    assert "no metrics" not in shown
    assert f"order (A baseline, B contender): {order_text(expected)}" in shown
    assert "ALERT (upper)" in shown
    ran = cli(
        "run", "--spec", deployment.spec, "--template", "bench.timed", "--adapter", "json",
        "--baseline", "ms=10", "--contender", "ms=30", "--iter", "4", "--duet-margin", "0.05",
        "--wait", "--err", "--no-context", env=env, check=False, timeout=120,
    )  # fmt: skip
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert "ALERT (upper)" in ran.stdout and "rounds" in ran.stdout
    assert "1 alert" in ran.stderr + ran.stdout


ILL_FORMED: list[tuple[dict[str, Any], str]] = [
    ({"contender": None}, "a duet needs both baseline and contender"),
    ({"baseline": {"image": "sha256:" + "a" * 64}}, "baseline.image is not allowed"),
    ({"contender": {"args": {"ms": 5000}}}, "contender.args"),
    ({"job": {"iter": 1}}, "at least 2 rounds"),
    ({"template": None}, "baseline.args is only allowed with a template"),
    ({"baseline": None, "contender": None}, "duet options need a baseline and a contender"),
    ({"duet": {"margin": 2}}, "margin"),
    ({"image": "sha256:" + "b" * 64, "template": None, "baseline": {"image": "sha256:" + "c" * 64},
      "contender": {"image": "sha256:" + "d" * 64}}, "not image"),
    ({"template": None, "baseline": {"image": "sha256:" + "c" * 64},
      "contender": {"image": "sha256:" + "d" * 64}}, "is not in project"),
    ({"template": None, "baseline": {"image": "bench:v1"}, "contender": {"image": "bench:v2"}},
     "tag 'v1' is not in project 'bench'"),
    ({"template": None, "baseline": {"image": "bench:v1"}, "contender": {"image": "Bench:v2"}},
     "contender.image 'Bench:v2': repository 'Bench' is not a repository name"),
    ({"template": None, "baseline": {"image": "other:v1"}, "contender": {"image": "bench:v2"}},
     "image repository 'other' is not project 'bench'"),
    ({"template": None, "baseline": {"image": "registry.example:5000/bench:v1"},
      "contender": {"image": "bench:v2"}}, "image registry 'registry.example:5000' is not this"),
    ({"template": None, "baseline": {"image": "bench:v1"},
      "contender": {"image": "registry.example:5000/bench:v2"}},
     "image registry 'registry.example:5000' is not this"),
]  # fmt: skip


@pytest.mark.engine_independent
def test_an_ill_formed_duet_is_a_400_naming_the_field(deployment: Deployment) -> None:
    with deployment.http() as api:
        for change, message in ILL_FORMED:
            body = {k: v for k, v in {**_duet_body(deployment), **change}.items() if v is not None}
            response = api.post("/v0/run", json=body)
            assert response.status_code == 400, (change, response.text)
            assert message in response.json()["message"], (change, response.text)
