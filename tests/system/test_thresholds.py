"""Thresholds, boundaries and alerts over real HTTP, on both engines: direct runs build a
history, a regression raises an alert in the run's answer, and the thresholds, alerts,
benchmarks and baselines routes change what is judged and how.

One server per engine serves the whole module (starting one costs more than these tests'
requests); each test works in a project of its own.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from benchrunner.api.alerts import Alert, AlertPrecision
from benchrunner.api.base import Answer
from benchrunner.api.thresholds import Threshold, ThresholdModelBody
from tests.harness import Deployment
from tests.system.project_api import Api, latency, measures_of

UNDRAWN = {"baseline": None, "lower_limit": None, "upper_limit": None}
"""A boundary stored for a judged metric whose history draws no limits (Bencher v0.6.12)."""
LATENCY_10PCT = {"test": "percentage", "upper_boundary": 0.1, "min_sample_size": 3}


def test_a_regression_raises_an_alert_in_the_answer(api: Api) -> None:
    first = api.run(
        latency(parse=100, write=100), thresholds={"models": {"latency": LATENCY_10PCT}}
    )
    assert first["alerts"] == []
    assert measures_of(first, "parse")["latency"]["measure"]["units"] == "nanoseconds (ns)"
    # Too few samples (min_sample_size 3): the threshold is shown and, as Bencher v0.6.12, a
    # boundary with nothing drawn; no alert.
    early = api.run(latency(parse=500, write=100))
    assert measures_of(early, "parse")["latency"]["boundary"] == UNDRAWN
    assert early["alerts"] == []
    for value in (100, 102, 98):
        api.run(latency(parse=value, write=value))
    regressed = api.run(latency(parse=130, write=105))
    parse = measures_of(regressed, "parse")["latency"]
    assert parse["threshold"]["model"]["test"] == "percentage"
    # History: 100, 500, 100, 102, 98 -> mean 180, upper limit 198: the outlier hides 130.
    assert parse["boundary"]["baseline"] == pytest.approx(180.0)
    assert regressed["alerts"] == []
    for value in (100, 100, 100, 100, 100):
        api.run(latency(parse=value, write=value))
    newest = {**LATENCY_10PCT, "max_sample_size": 5}  # only the five steady values count
    regressed = api.run(latency(parse=130, write=105), thresholds={"models": {"latency": newest}})
    [alert] = regressed["alerts"]
    assert alert["limit"] == "upper" and alert["status"] == "active"
    assert alert["benchmark"]["name"] == "parse" and alert["metric"]["value"] == 130
    assert alert["boundary"]["upper_limit"] < 130 and alert["report"] == regressed["uuid"]
    assert api.get(f"/reports/{regressed['uuid']}")["alerts"] == regressed["alerts"]

    listed = api.http.get(f"{api.project}/alerts", params={"status": "active"})
    assert listed.headers["X-Total-Count"] == "1" and listed.json()[0]["uuid"] == alert["uuid"]
    assert api.get("/alerts", benchmark="write") == []
    assert len(api.get("/alerts", report=regressed["uuid"], measure="latency")) == 1
    dismissed = api.http.patch(
        f"{api.project}/alerts/{alert['uuid']}", json={"status": "dismissed"}
    )
    assert dismissed.status_code == 200 and dismissed.json()["status"] == "dismissed"
    assert api.get("/alerts", status="active") == []
    assert api.get(f"/alerts/{alert['uuid']}")["status"] == "dismissed"
    bad = api.http.patch(f"{api.project}/alerts/{alert['uuid']}", json={"status": "gone"})
    assert bad.status_code == 400 and "status" in bad.json()["message"]


def test_overrides_and_ignored_benchmarks(api: Api) -> None:
    models = {"latency": {"test": "static", "upper_boundary": 1000}}
    api.run(latency(fast=10, slow=10, skip=10), thresholds={"models": models})
    threshold = api.get("/thresholds")[0]
    override = api.http.post(
        f"{api.project}/thresholds",
        json={
            "branch": "main",
            "testbed": "ci",
            "measure": "latency",
            "benchmark": "fast",
            "test": "static",
            "upper_boundary": 50,
        },
    )
    assert override.status_code == 201, override.text
    assert override.json()["benchmark"]["name"] == "fast"
    ignored = api.http.patch(f"{api.project}/benchmarks/skip", json={"ignored": True})
    assert ignored.status_code == 200 and ignored.json()["ignored"] is True

    report = api.run(latency(fast=60, slow=60, skip=5000))
    names = {r["benchmark"]["name"] for r in report["results"][0]}
    assert names == {"fast", "slow", "skip"}  # the ignored one stored all the same
    assert measures_of(report, "fast")["latency"]["threshold"]["uuid"] == override.json()["uuid"]
    assert measures_of(report, "slow")["latency"]["threshold"]["uuid"] == threshold["uuid"]
    skipped = measures_of(report, "skip")["latency"]
    assert skipped["threshold"] is None and skipped["boundary"] is None
    assert [a["benchmark"]["name"] for a in report["alerts"]] == ["fast"]
    assert [b["name"] for b in api.get("/benchmarks")] == ["fast", "skip", "slow"]


def test_an_ignore_suffix_stores_and_draws_but_never_alerts(api: Api) -> None:
    steady = latency(snake=100, Pascal=100, kebab=100)
    first = api.run(steady, thresholds={"models": {"latency": LATENCY_10PCT}})
    uuids = {r["benchmark"]["name"]: r["benchmark"]["uuid"] for r in first["results"][0]}
    for _ in range(3):
        api.run(steady)
    suffixed = {
        "snake_bencher_ignore": 500,
        "PascalBencherIgnore": 500,
        "kebab-bencher-ignore": 500,
    }
    ignored = api.run(latency(**suffixed))
    assert ignored["alerts"] == []
    for result in ignored["results"][0]:  # stored under the stripped name, on the same benchmark
        assert uuids[result["benchmark"]["name"]] == result["benchmark"]["uuid"]
        [measure] = result["measures"]
        assert measure["metric"]["value"] == 500
        assert measure["boundary"]["baseline"] == pytest.approx(100.0)
        assert measure["boundary"]["upper_limit"] == pytest.approx(110.0)
    assert len(ignored["results"][0]) == 3
    assert {b["name"] for b in api.get("/benchmarks")} == {"snake", "Pascal", "kebab"}
    # The same outlier without the suffix alerts (the history holds the 500 now: limit 220).
    alerted = api.run(latency(snake=500, Pascal=100, kebab=100))
    assert [a["benchmark"]["name"] for a in alerted["alerts"]] == ["snake"]


def test_thresholds_crud_keeps_the_model_history(api: Api, shared: Deployment) -> None:
    api.run(latency(a=1))
    created = api.http.post(
        f"{api.project}/thresholds",
        json={"branch": "main", "testbed": "ci", "measure": "Latency", **LATENCY_10PCT},
    )
    assert created.status_code == 201, created.text
    threshold = created.json()
    again = api.http.post(
        f"{api.project}/thresholds",
        json={"branch": "main", "testbed": "ci", "measure": "latency", **LATENCY_10PCT},
    )
    assert again.status_code == 409
    bad = api.http.put(
        f"{api.project}/thresholds/{threshold['uuid']}",
        json={"test": "z_score", "upper_boundary": 2},
    )
    assert bad.status_code == 400 and "upper_boundary" in bad.json()["message"]
    updated = api.http.put(
        f"{api.project}/thresholds/{threshold['uuid']}",
        json={"test": "t_test", "upper_boundary": 0.99, "max_sample_size": 64},
    )
    assert updated.status_code == 200, updated.text
    shown = api.get(f"/thresholds/{threshold['uuid']}")
    assert shown["model"]["test"] == "t_test"
    assert [m["test"] for m in shown["models"]] == ["t_test", "percentage"]
    assert shown["models"][1]["replaced"] is not None and shown["models"][0]["replaced"] is None
    assert len(api.get("/thresholds", measure="latency", branch="main")) == 1
    assert api.get("/thresholds", testbed="ci", per_page=1, page=2) == []

    # POST /v0/run: a bad model is a 400 naming it; reset drops the measures not listed.
    refused = api.run_raw(
        latency(a=1), thresholds={"models": {"latency": {"test": "iqr", "upper_boundary": -1}}}
    )
    assert refused.status_code == 400
    assert "thresholds.models.latency" in refused.json()["message"]
    assert "upper_boundary" in refused.json()["message"]
    api.run(
        {"a": {"latency": {"value": 1}, "throughput": {"value": 5}}},
        thresholds={"models": {"throughput": {"test": "static", "lower_boundary": 1}}},
    )
    assert len(api.get("/thresholds")) == 2
    api.run(
        {"a": {"throughput": {"value": 5}}},
        thresholds={
            "models": {"throughput": {"test": "static", "lower_boundary": 1}},
            "reset": True,
        },
    )
    [kept] = api.get("/thresholds")
    assert kept["measure"]["units"] == "operations / second (ops/s)"
    deleted = api.http.delete(f"{api.project}/thresholds/{kept['uuid']}")
    assert deleted.status_code == 204 and api.get("/thresholds") == []

    with shared.admin() as client:
        client.create_project("acme", "secret", "private")
    anonymous = Api(shared, api.slug, anonymous=True)
    assert anonymous.http.get("/v0/projects/secret/thresholds").status_code == 404
    assert anonymous.http.get(f"{api.project}/measures").status_code == 200
    refused = anonymous.http.patch(f"{api.project}/benchmarks/a", json={"ignored": True})
    assert refused.status_code == 403  # the project's organization is claimed
    anonymous.http.close()


def test_versions_context_start_points_and_fold(api: Api) -> None:
    sha = "ab" * 20
    first = api.run(latency(a=1), hash=sha)
    assert first["branch"]["head"]["version"] == {"number": 1, "hash": sha}
    assert api.run(latency(a=1), hash=sha)["branch"]["head"]["version"]["number"] == 1
    assert api.run(latency(a=1), hash="cd" * 20)["branch"]["head"]["version"]["number"] == 2
    assert api.run(latency(a=1))["branch"]["head"]["version"]["number"] == 3

    context = {
        "bencher.dev/v0/branch/ref/name": "feature",
        "bencher.dev/v0/branch/hash": "EF" * 20,
        "bencher.dev/v0/testbed/os": "linux",
    }
    from_context = api.run(latency(a=1), branch=None, testbed=None, context=context)
    assert from_context["branch"]["name"] == "feature"
    assert from_context["branch"]["head"]["version"]["hash"] == "ef" * 20
    assert from_context["testbed"]["name"] == "linux"
    assert api.run(latency(a=1), context=context)["branch"]["name"] == "main"  # body wins

    # main: a threshold and a steady history on testbed ci; a new branch starting from main
    # inherits both, so its first regressed value already raises an alert.
    api.run(latency(b=100), thresholds={"models": {"latency": LATENCY_10PCT}})
    for _ in range(3):
        api.run(latency(b=100))
    [main_threshold] = api.get("/thresholds", branch="main")
    confirming = api.http.put(  # the clone keeps its confirmation runs too
        f"{api.project}/thresholds/{main_threshold['uuid']}", json={**LATENCY_10PCT, "confirm": 2}
    )
    assert confirming.status_code == 200, confirming.text
    start = {"branch": "main", "clone_thresholds": True}
    branched = api.run(latency(b=150), branch="pr-1", start_point=start)
    main_uuid = api.get("/branches/main")["uuid"]
    assert branched["branch"]["head"]["start_point"]["branch"] == main_uuid
    assert [a["limit"] for a in branched["alerts"]] == ["upper"]
    [cloned] = api.get("/thresholds", branch="pr-1")
    assert cloned["confirm"] == 2
    # reset: the branch's history starts over (nothing inherited, nothing of its own).
    fresh = api.run(latency(b=150), branch="pr-1", start_point={"reset": True})
    assert measures_of(fresh, "b")["latency"]["boundary"] == UNDRAWN
    assert api.get("/branches/pr-1")["start_point"] is None

    folded = api.run(
        [latency(a=3), latency(a=1), latency(a=2)], settings={"adapter": "json", "fold": "median"}
    )
    assert (
        len(folded["results"]) == 1 and measures_of(folded, "a")["latency"]["metric"]["value"] == 2
    )
    assert folded["settings"]["fold"] == "median"
    unfolded = api.run([latency(a=3), latency(a=1)])
    assert len(unfolded["results"]) == 2


def test_a_baseline_reset_dismisses_and_rebaselines(api: Api) -> None:
    api.run(latency(a=100), thresholds={"models": {"latency": LATENCY_10PCT}})
    for _ in range(3):
        api.run(latency(a=100))
    intended = api.run(latency(a=200))
    assert len(intended["alerts"]) == 1
    reset = api.http.post(
        f"{api.project}/baselines",
        json={"branch": "main", "testbed": "ci", "measure": "latency", "report": intended["uuid"]},
    )
    assert reset.status_code == 201, reset.text
    assert reset.json()["dismissed"] == 1
    assert api.get("/alerts", status="dismissed")[0]["report"] == intended["uuid"]
    # History now starts at the intended report: 200 is the baseline, too few samples yet...
    assert measures_of(api.run(latency(a=200)), "a")["latency"]["boundary"] == UNDRAWN
    api.run(latency(a=200))
    judged = api.run(latency(a=205))
    assert measures_of(judged, "a")["latency"]["boundary"]["baseline"] == pytest.approx(200.0)
    assert judged["alerts"] == []
    elsewhere = api.http.post(
        f"{api.project}/baselines",
        json={"branch": "main", "testbed": "other", "report": intended["uuid"]},
    )
    assert elsewhere.status_code == 404


def test_change_points_raise_one_alert_per_step(api: Api) -> None:
    model = {"test": "change_point", "max_pvalue": 0.01, "min_magnitude": 0.05}
    api.run(latency(a=100), thresholds={"models": {"latency": model}})
    raised = []
    steady = [100, 101, 99, 100, 102, 98, 100, 101, 99, 100]
    for value in [*steady, *(v + 50 for v in steady)]:
        raised.extend(api.run(latency(a=value))["alerts"])
    assert len(raised) == 1, raised
    [step] = raised
    assert step["limit"] == "upper" and step["change"]["magnitude"] == pytest.approx(0.5, abs=0.05)
    assert step["metric"]["value"] == 150  # on the first value after the step


def test_change_points_over_values_near_the_largest_float_are_judged(api: Api) -> None:
    model = {"test": "change_point", "max_pvalue": 0.5}
    api.run(latency(a=1e308), thresholds={"models": {"latency": model}})
    for value in [-1e308, 1.7e308, 1e-308, 1.7e308, 1.7e308]:
        report = api.run(latency(a=value))  # a 500 here once: the level's sum overflowed
        level = measures_of(report, "a")["latency"]["boundary"]["baseline"]
        assert math.isfinite(level)


def test_a_runner_job_is_judged_when_processed(api: Api, shared: Deployment) -> None:
    for _ in range(3):
        api.run(
            {"sleep": {"latency": {"value": 10}}}, thresholds={"models": {"latency": LATENCY_10PCT}}
        )
    # Judged at once: no confirmation runs (tests/system/test_confirmations.py has them).
    [threshold] = api.get("/thresholds")
    unconfirmed = {**LATENCY_10PCT, "confirm": 0}
    answer = api.http.put(f"{api.project}/thresholds/{threshold['uuid']}", json=unconfirmed)
    assert answer.status_code == 200, answer.text
    # This machine is shared: its noise guard would find the report noisy and keep the alert
    # back (tests/system/test_noise_guard.py); here the judging itself is under test.
    quiet = {"noise_cv_limit": 1000.0, "noise_drift_limit": 1000.0}
    assert api.http.patch(f"/v0/specs/{shared.spec}", json=quiet).status_code == 200
    runner = shared.runner_process(f"judge-{api.slug}"[:64]).start()
    submitted = api.http.post(
        "/v0/run",
        json={
            "project": api.slug,
            "branch": "main",
            "testbed": "ci",
            "spec": shared.spec,
            "template": "bench.sleep",
            "args": {"ms": 40},
            "job": {"iter": 2},
            "settings": {"adapter": "json", "fold": "max"},
        },
    )
    assert submitted.status_code == 201, submitted.text
    assert submitted.json()["alerts"] == [] and submitted.json()["settings"]["fold"] == "max"
    shared.wait_status(submitted.json()["job"], "processed", project=api.slug, timeout=60)
    report = api.get(f"/reports/{submitted.json()['uuid']}")
    assert len(report["results"]) == 1  # two iterations folded into one
    [alert] = report["alerts"]
    assert (alert["limit"], alert["metric"]["value"]) == ("upper", 40)
    assert alert["boundary"]["upper_limit"] == pytest.approx(11.0)
    runner.kill()


def test_the_largest_counts_bencher_accepts_are_stored_on_every_engine(api: Api) -> None:
    """Sample sizes, windows and max_versions go up to 2**32 - 1 (Bencher's u32): PostgreSQL's
    32-bit integer cannot hold that, so the columns are 64-bit."""
    largest = 2**32 - 1
    model = {**LATENCY_10PCT, "max_sample_size": largest, "window": largest}
    api.run(latency(a=100), thresholds={"models": {"latency": model}})
    [threshold] = api.get("/thresholds")
    assert threshold["model"]["max_sample_size"] == largest
    assert threshold["model"]["window"] == largest
    branched = api.run(
        latency(a=100), branch="pr-big", start_point={"branch": "main", "max_versions": largest}
    )
    assert branched["branch"]["head"]["start_point"]["max_versions"] == largest
    assert api.get("/branches/pr-big")["start_point"]["max_versions"] == largest


def test_names_with_a_slash_are_read_and_changed_by_name(api: Api) -> None:
    """Branches such as ``feature/x`` and grouped benchmarks such as Criterion's ``fib/10``
    are reached by name, as the client sends them (one percent-encoded path segment)."""
    api.run(latency(**{"fib/10": 1}), branch="feature/x")
    assert api.get("/branches/feature%2Fx")["name"] == "feature/x"
    assert api.get("/benchmarks/fib%2F10")["slug"] == "fib-10"
    ignored = api.http.patch(f"{api.project}/benchmarks/fib%2F10", json={"ignored": True})
    assert ignored.status_code == 200, ignored.text
    assert ignored.json()["name"] == "fib/10" and ignored.json()["ignored"] is True
    missing = api.http.get(f"{api.project}/benchmarks/fib%2F11")
    assert missing.status_code == 404 and "fib/11" in missing.json()["message"]


def _described(model: type[Answer], answer: Any) -> None:
    """The answer model names every field the server sent: parsed and dumped back, the JSON is
    the same (so the CLI's --json shows what the server said)."""
    assert model.model_validate(answer).model_dump(mode="json", exclude_unset=True) == answer


def test_the_answer_models_describe_the_servers_answers(api: Api, shared: Deployment) -> None:
    for value in (100, 100, 100, 130):
        api.run(latency(parse=value), thresholds={"models": {"latency": LATENCY_10PCT}})
    [alert] = api.get("/alerts")
    for each in (alert, api.get(f"/alerts/{alert['uuid']}")):
        _described(Alert, each)
    with shared.admin() as client:
        triaged = client.triage_alert(api.slug, alert["uuid"], "true_positive")
        assert type(triaged) is Alert and triaged.verdict == "true_positive"
        assert triaged.verdict_by is not None and triaged.measure.units == "nanoseconds (ns)"
        created = client.create_threshold(
            api.slug,
            branch="main",
            testbed="ci",
            measure="latency",
            benchmark="parse",
            model=ThresholdModelBody(test="change_point"),
        )
        assert created.benchmark is not None and created.benchmark.name == "parse"
        assert created.model is not None and created.model.max_pvalue is not None
    _described(Alert, api.get(f"/alerts/{alert['uuid']}"))
    _described(AlertPrecision, api.get("/alerts/precision"))
    for threshold in api.get("/thresholds"):
        _described(Threshold, threshold)
        _described(Threshold, api.get(f"/thresholds/{threshold['uuid']}"))
