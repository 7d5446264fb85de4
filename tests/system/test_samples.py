"""Raw samples and the ``samples`` threshold test over real HTTP, on both engines: every
iteration's and every harness sample kept with the report and read back through the report, the
perf query, the CLI and the console; a series with a step alerts once under ``samples``.

One server per engine serves the whole module; each test works in a project of its own.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.harness import Deployment
from tests.system.project_api import T0, Api, latency, measures_of

HYPERFINE = Path(__file__).parents[1] / "adapter_samples" / "shell_hyperfine" / "two_commands.json"
SAMPLES_MODEL = {"test": "samples"}


def _run_text(api: Api, adapter: str, text: str) -> str:
    """A direct run of one harness output; its report's UUID."""
    api.minute += 1
    at = (T0 + dt.timedelta(minutes=api.minute)).isoformat()
    answer = api.http.post(
        "/v0/run",
        json={
            "project": api.slug,
            "branch": "main",
            "testbed": "ci",
            "start_time": at,
            "end_time": at,
            "settings": {"adapter": adapter},
            "results": [text],
        },
    )
    assert answer.status_code == 201, answer.text
    return str(answer.json()["uuid"])


def _samples(report: dict[str, Any]) -> list[tuple[int, str, dict[str, Any]]]:
    return [
        (bench["iteration"], bench["benchmark"]["name"], entry["samples"])
        for iteration in report["results"]
        for bench in iteration
        for entry in bench["measures"]
    ]


def test_every_iteration_and_every_folded_value_is_a_sample(api: Api) -> None:
    report = api.run([latency(a=10), latency(a=12), latency(a=11)])
    assert "samples" not in measures_of(report, "a")["latency"]  # only when asked for
    found = api.get(f"/reports/{report['uuid']}", samples="true")
    assert [(i, b, s["values"], s["count"]) for i, b, s in _samples(found)] == [
        (0, "a", [10.0], 1),
        (1, "a", [12.0], 1),
        (2, "a", [11.0], 1),
    ]
    folded = api.run(
        [latency(a=10), latency(a=12), latency(a=11)],
        settings={"adapter": "json", "fold": "median"},
    )
    entry = measures_of(folded, "a")["latency"]
    assert entry["metric"]["value"] == 11  # the fold's value, as Bencher's
    [(_, _, kept)] = _samples(api.get(f"/reports/{folded['uuid']}", samples="true"))
    assert kept == {
        "values": [10.0, 12.0, 11.0],
        "count": 3,
        "min": 10.0,
        "max": 12.0,
        "cut": False,
    }


def test_a_harness_samples_are_kept_beside_bencher_values(api: Api) -> None:
    uuid = _run_text(api, "shell_hyperfine", HYPERFINE.read_text())
    report = api.get(f"/reports/{uuid}", samples="true")
    gzip = measures_of(report, "gzip -k -f corpus.txt")["latency"]
    assert gzip["metric"]["value"] == pytest.approx(0.25e9)  # the mean, untouched
    assert gzip["samples"]["values"] == pytest.approx([0.23e9, 0.2475e9, 0.2425e9, 0.28e9])
    assert gzip["samples"]["count"] == 4
    perf = api.get(
        "/perf",
        branches="main",
        testbeds="ci",
        benchmarks="gzip -k -f corpus.txt",
        measures="latency",
        samples="true",
    )
    [point] = perf["results"][0]["metrics"]
    assert point["samples"]["values"] == gzip["samples"]["values"]
    assert (
        "samples"
        not in api.get(
            "/perf",
            branches="main",
            testbeds="ci",
            benchmarks="gzip -k -f corpus.txt",
            measures="latency",
        )["results"][0]["metrics"][0]
    )


def test_more_samples_than_the_cap_are_summarized(api: Api) -> None:
    values = [float(v) for v in range(1, 2502)]
    suite = {
        "version": "1.0",
        "metadata": {"name": "many", "unit": "second"},
        "benchmarks": [{"runs": [{"values": values}]}],
    }
    uuid = _run_text(api, "python_pyperf", json.dumps(suite))
    report = api.get(f"/reports/{uuid}", samples="true")
    kept = measures_of(report, "many")["latency"]["samples"]
    assert (kept["count"], kept["min"], kept["max"], kept["cut"]) == (2501, 1e9, 2501e9, True)
    assert len(kept["values"]) == 1000 and kept["values"][0] == 1e9


def _iterations(
    generator: np.random.Generator, center: float, name: str = "a"
) -> list[dict[str, Any]]:
    return [latency(**{name: float(v)}) for v in generator.normal(center, center * 0.005, 5)]


def test_a_step_alerts_once_under_samples_and_again_under_t_test(api: Api) -> None:
    generator = np.random.default_rng(7)
    thresholds = {"models": {"latency": SAMPLES_MODEL}}
    raised: list[tuple[int, dict[str, Any]]] = []
    levels = [100.0] * 8 + [105.0] * 8
    verdicts: list[str | None] = []
    uuids: list[str] = []
    for run, level in enumerate(levels):
        report = api.run(_iterations(generator, level), thresholds=thresholds)
        raised.extend((run, alert) for alert in report["alerts"])
        verdicts.append((measures_of(report, "a")["latency"].get("boundary") or {}).get("verdict"))
        uuids.append(report["uuid"])
        if run == 0:
            thresholds = {}
    # The step's first run alone could be a one-off slow run (unknown); its second run agrees.
    assert verdicts[:10] == [None, *["unknown"] * 4, *["same"] * 3, "unknown", "different"]
    # One alert (the look-back finds the step's alert on the run where it began: none of its own)
    assert [run for run, _ in raised] == [9], raised
    [(_, alert)] = raised
    assert (alert["report"], alert["raised_by"]) == (uuids[8], uuids[9])
    assert alert["limit"] == "upper"
    assert alert["change"]["magnitude"] == pytest.approx(0.05, abs=0.01)
    assert alert["change"]["pvalue"] < 0.05
    judged = measures_of(api.get(f"/reports/{alert['report']}"), "a")["latency"]
    assert judged["threshold"]["model"]["test"] == "samples"
    assert judged["threshold"]["model"]["min_magnitude"] == 0.02
    assert judged["boundary"]["verdict"] == "unknown"  # as judged on its own; run 9 settled it
    # the newest report, at the new level, judged against the alerted one onward
    assert measures_of(report, "a")["latency"]["boundary"]["verdict"] in ("same", "unknown")


def test_the_window_counts_runs_however_many_iterations_each_has(api: Api) -> None:
    """Ten runs of 20 iterations are 200 points: the window of 64 keeps ten runs, not three, so
    a 5 % step's second run is judged different (three runs would be too few to judge)."""
    generator = np.random.default_rng(11)
    thresholds = {"models": {"latency": SAMPLES_MODEL}}
    verdicts: list[str | None] = []
    for level in [100.0] * 10 + [105.0] * 2:
        values = generator.normal(level, level * 0.005, 20)
        report = api.run([latency(a=float(v)) for v in values], thresholds=thresholds)
        thresholds = {}
        verdicts.append((measures_of(report, "a")["latency"].get("boundary") or {}).get("verdict"))
    assert verdicts[-2:] == ["unknown", "different"], verdicts
    assert [a["limit"] for a in report["alerts"]] == ["upper"]


def test_bencher_t_test_keeps_alerting_on_the_same_step(api: Api) -> None:
    generator = np.random.default_rng(7)
    model = {"test": "t_test", "upper_boundary": 0.99, "max_sample_size": 64}
    thresholds: dict[str, Any] = {"models": {"latency": model}}
    alerted_runs = set()
    for run, level in enumerate([100.0] * 8 + [105.0] * 8):
        report = api.run(_iterations(generator, level), thresholds=thresholds)
        thresholds = {}
        if report["alerts"]:
            alerted_runs.add(run)
    # The same data as above: Bencher's test alerts on the step and again on the runs after it.
    assert min(alerted_runs) == 8 and len(alerted_runs) > 1, alerted_runs


def test_too_few_runs_or_the_same_level_raise_nothing(api: Api) -> None:
    thresholds: dict[str, Any] = {"models": {"latency": SAMPLES_MODEL}}
    for value in [100.0, 100.0, 100.0, 300.0]:  # too few runs before: unknown, never an alert
        report = api.run(latency(a=value), thresholds=thresholds)
        assert report["alerts"] == []
        thresholds = {}
    assert measures_of(report, "a")["latency"]["boundary"]["verdict"] == "unknown"
    generator = np.random.default_rng(3)
    for _ in range(6):
        assert api.run(_iterations(generator, 100.0))["alerts"] == []


def test_the_cli_and_the_console_show_the_samples(api: Api, shared: Deployment) -> None:
    report = api.run(
        [latency(a=10), latency(a=14), latency(a=11)], settings={"adapter": "json", "fold": "max"}
    )
    shown = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchrunner",
            "report",
            "show",
            report["uuid"],
            "--samples",
            "--project",
            api.slug,
            "--host",
            shared.server.url,
            "--token",
            shared.server.token,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert shown.returncode == 0, shown.stderr
    assert "samples" in shown.stdout and "10, 14, 11" in shown.stdout
    page = api.http.get(f"/console/projects/{api.slug}/reports/{report['uuid']}")
    assert page.status_code == 200
    assert 'class="samples-plot"' in page.text and page.text.count('class="sample"') == 3
    assert 'data-samples="3"' in page.text


def test_a_runner_job_keeps_its_iterations_and_is_judged_by_samples(
    api: Api, shared: Deployment
) -> None:
    history = _iterations(np.random.default_rng(1), 40e6, "sleep")  # bench.sleep's 40 ms, in ns
    api.run(history, thresholds={"models": {"latency": SAMPLES_MODEL}})
    # Judged at once: no confirmation runs (tests/system/test_confirmations.py has them).
    [threshold] = api.get("/thresholds")
    unconfirmed = {**SAMPLES_MODEL, "confirm": 0}
    answer = api.http.put(f"{api.project}/thresholds/{threshold['uuid']}", json=unconfirmed)
    assert answer.status_code == 200, answer.text
    quiet = {"noise_cv_limit": 1000.0, "noise_drift_limit": 1000.0}
    assert api.http.patch(f"/v0/specs/{shared.spec}", json=quiet).status_code == 200
    runner = shared.runner_process(f"samples-{api.slug}"[:64]).start()
    try:
        submitted = api.http.post(
            "/v0/run",
            json={
                "project": api.slug,
                "branch": "main",
                "testbed": "ci",
                "spec": shared.spec,
                "template": "bench.sleep",
                "args": {"ms": 40},
                "job": {"iter": 4},
                "settings": {"adapter": "json", "fold": "median"},
            },
        )
        assert submitted.status_code == 201, submitted.text
        shared.wait_status(submitted.json()["job"], "processed", project=api.slug, timeout=60)
    finally:
        runner.kill()
    report = api.get(f"/reports/{submitted.json()['uuid']}", samples="true")
    [(_, name, kept)] = _samples(report)
    assert kept["count"] == 4 and len(kept["values"]) == 4
    entry = measures_of(report, name)["latency"]
    assert entry["threshold"]["model"]["test"] == "samples"
    assert entry["boundary"]["baseline"] is not None  # judged against the direct runs' samples
