"""Duet runs through a real server and a real runner process: two argument sets of one
template interleaved in one job, paired by the server into a ratio with an interval."""

from __future__ import annotations

from typing import Any

import pytest

from benchrunner.api.alerts import DuetMargin
from benchrunner.api.thresholds import ThresholdModelBody
from benchrunner.core.duet_order import order_text, run_sequence
from tests.harness import Deployment, cli, output_json

SEED = 42
ROUNDS = 8


def _duet_body(deployment: Deployment, **overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "project": deployment.project,
        "spec": deployment.spec,
        "template": "bench.timed",
        # A twentyfold contrast: a loaded machine stretches the short sleeps, and the interval's
        # lower end (about the third-lowest of eight rounds) must stay above the margins tested.
        "baseline": {"args": {"ms": 5}},
        "contender": {"args": {"ms": 100}},
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
    job = deployment.wait_status(str(submitted.job), "processed", timeout=90)

    expected = run_sequence(SEED, ROUNDS)
    results = output_json(job)["results"]
    assert [(r["round"], r["side"]) for r in results] == expected
    assert all(r["exit_code"] == 0 for r in results)
    assert job.config.duet is not None and job.config.duet.seed == SEED

    with deployment.admin() as client:
        report = client.get_report(deployment.project, job.report)
    assert report.error is None
    assert report.results == []  # no absolute metric: the perf history stays clean
    duet = report.duet
    assert duet is not None
    assert duet.order == order_text(expected)
    assert (duet.seed, duet.rounds, duet.resamples) == (SEED, ROUNDS, 2000)
    assert duet.confidence == 0.95 and duet.margin == 0.05
    assert "bootstrap" in duet.method
    (found,) = duet.results
    assert (found.benchmark.name, found.measure.slug) == ("timed", "latency")
    assert found.rounds == ROUNDS
    assert 1.05 < found.lower_value < found.ratio < found.upper_value
    assert found.margin == DuetMargin(lower=0.05, upper=0.05, source="run", threshold=None)
    assert found.alert is not None
    assert found.alert.limit == "upper" and found.alert.status == "active"
    assert duet.alerts == 1

    # The alert is an ordinary one: listed with the project's alerts, said to be a duet's,
    # and dismissed as any other.
    with deployment.admin() as client:
        (listed,) = client.list_alerts(deployment.project, report=job.report)
        assert listed.uuid == found.alert.uuid
        assert (listed.kind, listed.limit, listed.status) == ("duet", "upper", "active")
        assert listed.report == listed.raised_by == job.report
        assert listed.benchmark.name == "timed" and listed.measure.slug == "latency"
        assert listed.metric is None and listed.boundary is None
        assert listed.value == found.ratio
        assert listed.duet is not None
        assert listed.duet.lower_value == found.lower_value
        assert listed.duet.margin.source == "run"
        assert listed.uuid in {a.uuid for a in client.list_alerts(deployment.project)}
        dismissed = client.update_alert(deployment.project, listed.uuid, "dismissed")
        assert dismissed.status == "dismissed" and dismissed.kind == "duet"
        assert client.list_alerts(deployment.project, status="active", report=job.report) == []
        # Triaged as any other; a margin given by the run counts under no threshold.
        triaged = client.triage_alert(deployment.project, listed.uuid, "true_positive")
        assert (triaged.kind, triaged.verdict) == ("duet", "true_positive")
        precision = client.alert_precision(deployment.project)
        (no_threshold,) = [t for t in precision.thresholds if t.threshold is None]
        assert (no_threshold.true_positive, no_threshold.precision) == (1, 1.0)
        after = client.get_report(deployment.project, job.report)
    assert after.duet is not None
    assert after.duet.results[0].alert is not None
    assert after.duet.results[0].alert.status == "dismissed"

    # The CLI: `report show` prints the duet apart, and a duet submitted with `run --baseline
    # --contender --wait --err` fails the step on its alert.
    env = deployment.cli_env(deployment.tmp)
    shown = cli("report", "show", job.report, env=env).stdout
    assert "no metrics" not in shown
    assert f"order (A baseline, B contender): {order_text(expected)}" in shown
    assert "upper (dismissed)" in shown and "±5% (run)" in shown
    listed_text = cli("alert", "list", "--status", "dismissed", env=env).stdout
    assert "ratio" in listed_text and "(duet, run)" in listed_text
    alert_text = cli("alert", "show", listed.uuid, env=env).stdout
    assert "duet (contender / baseline)" in alert_text and "±5% (run)" in alert_text
    # 5 against 100 ms: a loaded machine's overshoot of the baseline's sleep cannot close the
    # gap (10 against 30 ms over 4 rounds once gave an interval reaching below 1).
    ran = cli(
        "run", "--spec", deployment.spec, "--template", "bench.timed", "--adapter", "json",
        "--baseline", "ms=5", "--contender", "ms=100", "--iter", "6", "--duet-margin", "0.05",
        "--wait", "--err", "--no-context", env=env, check=False, timeout=120,
    )  # fmt: skip
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert "ALERT (upper)" in ran.stdout and "rounds" in ran.stdout
    assert "1 alert" in ran.stderr + ran.stdout


def test_a_duet_without_a_margin_takes_its_percentage_threshold(deployment: Deployment) -> None:
    """The run gives no margin: the branch/testbed's percentage threshold on the measure does,
    its upper boundary for the slower contender. Within +5,000 % the twentyfold ratio raises no
    alert (a margin of 0 would); once the threshold's model says +50 %, the same duet does."""
    deployment.runner_process("r1").start()
    loose = {"test": "percentage", "upper_boundary": 50.0, "lower_boundary": 0.1}
    body = _duet_body(deployment, duet={"seed": SEED, "resamples": 2000})
    with deployment.admin() as client:
        submitted = client.run({**body, "thresholds": {"models": {"latency": loose}}})
    job = deployment.wait_status(str(submitted.job), "processed", timeout=90)
    with deployment.admin() as client:
        report = client.get_report(deployment.project, job.report)
        (threshold,) = client.list_thresholds(deployment.project)
    assert report.duet is not None and report.duet.margin is None
    (found,) = report.duet.results
    assert found.ratio > 2
    assert found.margin == DuetMargin(
        lower=0.1, upper=50.0, source="threshold", threshold=threshold.uuid
    )
    assert found.alert is None and found.verdict == "contender higher, within the margin"

    tight = ThresholdModelBody(test="percentage", upper_boundary=0.5)
    with deployment.admin() as client:
        client.update_threshold(deployment.project, threshold.uuid, tight)
        submitted = client.run(body)
    job = deployment.wait_status(str(submitted.job), "processed", timeout=90)
    with deployment.admin() as client:
        report = client.get_report(deployment.project, job.report)
        alerts = client.list_alerts(deployment.project, report=job.report)
    assert report.duet is not None
    (found,) = report.duet.results
    assert len(alerts) == 1, found  # the interval and its margin, when it raised none
    (alerted,) = alerts
    assert found.margin.upper == 0.5 and found.margin.lower is None
    assert found.alert is not None and found.alert.uuid == alerted.uuid
    assert alerted.kind == "duet" and alerted.threshold is not None
    assert alerted.threshold.uuid == threshold.uuid
    assert alerted.threshold.model.upper_boundary == 0.5


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
