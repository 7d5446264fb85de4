"""The labelled corpus again, this time with confirmation runs: each run of each series is a
runner job, so a crossing is re-measured before it alerts, as it is for a team's CI jobs.

``benchmarks.alert_accuracy`` pushes the corpus through ``POST /v0/run``, where nothing can be
re-run. Here the same corpus (the same seed gives the same samples) is run by real
``benchrunner runner up`` agents (process executor; ``--runners``, as the values are drawn, not
timed) as template jobs of ``benchmarks/draw.py``: a
run's job measures exactly the corpus's samples of that run, and a confirmation's re-run, or a
duet's round, draws fresh samples from that run's distribution (its level, noise, mode and
outliers: ``draw.py``). Each run is a commit of its own (its ``hash`` and an argument), so a
confirmation runs as a duet against an earlier version where the server chooses one. Each
series is a branch of its own with a threshold of each test asked for, at the thresholds'
default confirmation (two runs' worth); the series advance in lockstep, the next run of every
series submitted once the last one's jobs and confirmations are done.

Printed per test, scored as ``benchmarks.alert_accuracy`` scores (the same ``--window``):
detected steps, false alarms, repeats, precision, recall, F1 and runs to detect; then each
test's false alarms by kind of series. Only the confirmation differs from that script's rows.

    .venv/bin/python -m benchmarks.alert_accuracy_confirmed [--series 40] [--seed 2]
        [--min-points 30] [--max-points 100] [--iterations 5] [--window 5] [--tests samples]
        [--runners 2]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
import tempfile
from pathlib import Path
from typing import Any

import httpx
from tests.databases import fresh_database
from tests.harness import deploy, wait_until

from benchmarks.alert_accuracy import (
    OUTLIER_SHARE,
    Series,
    corpus_arguments,
    corpus_of,
    measure_key,
    print_scores,
    raised_by_test,
    threshold_models,
)
from benchmarks.alert_accuracy_runs import settled

TEMPLATE = "draw"
DRAW = Path(__file__).with_name("draw.py")


def draw_template(state: Path) -> str:
    """The server's (and the runner's) template ``draw``, as TOML."""
    command = [sys.executable, "-I", "-S", str(DRAW), str(state)]
    command += ["{series}", "{measures}", "{samples}", "{level}", "{cv}", "{gap}"]
    command += ["{outliers}", "{commit}"]
    strings = ("series", "measures", "samples", "commit")
    floats = ("level", "cv", "gap", "outliers")
    lines = [f'\n[templates."{TEMPLATE}"]', f"command = {json.dumps(command)}", "timeout = 60"]
    for name in strings:
        lines += [f'[templates."{TEMPLATE}".args.{name}]', 'type = "string"']
    for name in floats:
        lines += [f'[templates."{TEMPLATE}".args.{name}]', 'type = "float"', "min = 0"]
    return "\n".join(lines) + "\n"


def run_body(
    project: str, series: Series, run: int, tests: list[str], first: bool
) -> dict[str, Any]:
    commit = hashlib.sha1(f"{series.name}/{run}".encode(), usedforsecurity=False).hexdigest()
    samples = series.points[run]
    body: dict[str, Any] = {
        "project": project,
        "branch": series.name,
        "hash": commit,
        "testbed": "localhost",
        "spec": "small",
        "template": TEMPLATE,
        "args": {
            "series": series.name,
            "measures": ",".join(measure_key(test) for test in tests),
            "samples": ",".join(repr(v) for v in samples),
            "level": series.levels[run],
            "cv": series.cv,
            "gap": series.gap,
            "outliers": OUTLIER_SHARE if series.kind == "outliers" else 0.0,
            "commit": commit,
        },
        "job": {"iter": len(samples)},
        "settings": {"adapter": "json", "fold": "mean"},
    }
    if first:
        body["thresholds"] = {"models": threshold_models(tests)}
    return body


def first_report_holds_the_corpus(
    client: httpx.Client, project: str, uuid: str, series: Series, test: str
) -> None:
    """The first run's job measured the corpus's own samples (no extra invocation took one)."""
    answer = client.get(f"/v0/projects/{project}/reports/{uuid}", params={"samples": "true"})
    measured: list[float] = []
    for iteration in answer.raise_for_status().json()["results"]:
        for bench in iteration:
            if bench["benchmark"]["name"] != series.name:
                continue
            for entry in bench["measures"]:
                if entry["measure"]["slug"] == measure_key(test):
                    measured += entry["samples"]["values"]
    pairs = list(zip(sorted(measured), sorted(series.points[0]), strict=False))
    if len(measured) != len(series.points[0]) or any(
        not math.isclose(a, b, rel_tol=1e-12) for a, b in pairs
    ):
        raise SystemExit(f"the first report measured {measured}, not {series.points[0]}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    corpus_arguments(parser, series=40, seed=2, max_points=100, tests=["samples"])
    parser.add_argument(
        "--runners", type=int, default=2, help="runner agents (the values are drawn, not timed)"
    )
    options = parser.parse_args()
    series = corpus_of(options, ", with confirmation")
    with tempfile.TemporaryDirectory() as tmp, fresh_database("sqlite", Path(tmp)) as url:
        template = draw_template(Path(tmp) / "draws")
        with (
            deploy(Path(tmp), url, extra_templates=template) as deployment,
            httpx.Client(
                base_url=deployment.server.url,
                headers={"Authorization": f"Bearer {deployment.server.token}"},
                timeout=120,
            ) as client,
        ):
            for number in range(options.runners):
                deployment.runner_process(f"corpus-{number}").start()
            wait_until(
                lambda: (
                    client.get("/v0/server/health").json()["waiting_runners"] == options.runners
                ),
                timeout=120,
                message="the runner waiting",
            )
            reports: dict[str, tuple[str, int]] = {}
            for run in range(max(len(s.points) for s in series)):
                for one in series:
                    if run >= len(one.points):
                        continue
                    body = run_body(deployment.project, one, run, options.tests, run == 0)
                    response = client.post("/v0/run", json=body)
                    if response.status_code >= 300:
                        raise SystemExit(
                            f"POST /v0/run: {response.status_code} {response.text[:300]}"
                        )
                    reports[response.json()["uuid"]] = (one.name, run)
                wait_until(
                    lambda: settled(client, deployment.project),
                    timeout=1800.0,
                    interval=0.2,
                    message=f"run {run}'s jobs and confirmations done",
                )
                if run == 0:
                    uuid = next(iter(reports))
                    first_report_holds_the_corpus(
                        client, deployment.project, uuid, series[0], options.tests[0]
                    )
            by_test = raised_by_test(client, deployment.project, reports, options.tests)
    print_scores(series, by_test, options.window, ", confirmed")


if __name__ == "__main__":
    main()
