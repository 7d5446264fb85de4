"""How often each threshold test's alerts are right, on a labelled corpus pushed through the API.

A seeded corpus of series, each a benchmark of its own, is pushed through a real server's
``POST /v0/run`` (SQLite), one report a point, each report carrying ``--iterations`` samples
of every measure. Each measure of the project is judged by one test at its default parameters
(``MODELS``), so every test sees exactly the same data. Kinds of series, ``--min-points`` to
``--max-points`` points each, noise CV drawn from 0.5 % to 10 % (log-uniform):

- ``step``: the level moves up or down by 1 to 20 % at one known run (the change point);
- ``none``: noise alone;
- ``outliers``: noise, with about 2 % of the points 1.5 to 3 times the level;
- ``drift``: the level creeps 5 to 15 % over the whole series, with no step;
- ``bimodal``: each point comes from one of two modes 5 to 15 % apart, as harnesses that land on
  one of two code layouts do.

Only ``step`` series have a change point. Scoring, per test: the first alert at or after the
step and at most ``--window`` runs later *detects* it (runs-to-detect counts the step's own run
as 1); every other alert on a series before its step, on a series with no step, or after a
missed window is a *false alarm*; an alert after the detection is a *repeat*. An alert counts
at the run whose report raised it (``raised_by``). Printed per test: detected steps, false
alarms, repeats, precision = detected / (detected + false alarms), the same with repeats
counted as false, recall, F1, and the median runs-to-detect; then, per test, its false alarms by
kind of series. The ``samples`` row (``"test": "samples"``, beyond Bencher) is judged in the same
run as Bencher's tests, on the same data.

    .venv/bin/python -m benchmarks.alert_accuracy [--series 60] [--seed 1]
        [--min-points 30] [--max-points 120] [--iterations 5] [--window 5]
        [--tests percentage z_score t_test log_normal iqr delta_iqr change_point samples]

``static`` is left out: its limits are absolute values, meaningful only for one series.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import math
import statistics
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from tests.databases import fresh_database
from tests.harness import deploy, wait_until

from benchmarks.draw import BIMODAL_UPPER

START = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
KINDS = ("step", "none", "outliers", "drift", "bimodal")

MODELS: dict[str, dict[str, Any]] = {
    "percentage": {"test": "percentage", "lower_boundary": 0.1, "upper_boundary": 0.1},
    "z_score": {"test": "z_score", "lower_boundary": 0.99, "upper_boundary": 0.99},
    "t_test": {"test": "t_test", "lower_boundary": 0.99, "upper_boundary": 0.99},
    "log_normal": {"test": "log_normal", "lower_boundary": 0.99, "upper_boundary": 0.99},
    "iqr": {"test": "iqr", "lower_boundary": 3.0, "upper_boundary": 3.0},
    "delta_iqr": {"test": "delta_iqr", "lower_boundary": 3.0, "upper_boundary": 3.0},
    "change_point": {"test": "change_point"},
    "samples": {"test": "samples"},
}
"""Each test's parameters: both directions judged; the limits Bencher's documentation uses in
its examples (0.99 for the distribution tests, 10 % for ``percentage``) and, for the IQR tests,
a multiplier of 3. Every history test looks at the latest 64 values (``max_sample_size``)."""
MAX_SAMPLE_SIZE = 64
OUTLIER_SHARE = 0.02
"""The share of an ``outliers`` series' runs 1.5 to 3 times its level."""
HISTORY_TESTS = ("percentage", "z_score", "t_test", "log_normal", "iqr", "delta_iqr")


def measure_key(test: str) -> str:
    """The measure a test judges: a plain word, so its slug is itself."""
    return "m" + test.replace("_", "")


@dataclasses.dataclass(frozen=True)
class Series:
    name: str
    kind: str
    points: list[list[float]]
    """Each run's samples."""
    step: int | None
    """The index of the first run at the new level (``step`` series only)."""
    levels: list[float] = dataclasses.field(default_factory=list)
    """Each run's level before a bimodal series' mode is drawn: what a re-run of the run
    draws from (``alert_accuracy_confirmed``)."""
    cv: float = 0.0
    gap: float = 0.0
    """A bimodal series' distance of its upper mode (0 for other kinds)."""


def make_series(
    index: int, kind: str, length: int, iterations: int, rng: np.random.Generator
) -> Series:
    cv = math.exp(rng.uniform(math.log(0.005), math.log(0.10)))
    level = np.full(length, 1000.0)
    step = None
    if kind == "step":
        step = int(rng.integers(int(length * 0.3), int(length * 0.8)))
        size = rng.uniform(0.01, 0.20) * (1 if rng.random() < 0.5 else -1)
        level[step:] *= 1 + size
    elif kind == "drift":
        level *= np.linspace(1.0, 1.0 + rng.uniform(0.05, 0.15), length)
    base = level.copy()
    gap = 0.0
    if kind == "bimodal":
        gap = rng.uniform(0.05, 0.15)
        level = np.where(rng.random(length) < BIMODAL_UPPER, level * (1 + gap), level)
    points = []
    for run in range(length):
        samples = level[run] * (1 + cv * rng.standard_normal(iterations))
        if kind == "outliers" and rng.random() < OUTLIER_SHARE:
            samples *= rng.uniform(1.5, 3.0)
        points.append([float(max(v, 1e-3)) for v in samples])
    return Series(
        f"{kind}-{index:03d}", kind, points, step, [float(v) for v in base], cv, float(gap)
    )


def corpus(
    count: int, seed: int, min_points: int, max_points: int, iterations: int
) -> list[Series]:
    rng = np.random.default_rng(seed)
    # Half the series have a step, the rest are split among the kinds without one.
    kinds = ["step" if i % 2 == 0 else KINDS[1 + (i // 2) % 4] for i in range(count)]
    return [
        make_series(i, kind, int(rng.integers(min_points, max_points + 1)), iterations, rng)
        for i, kind in enumerate(kinds)
    ]


def threshold_models(tests: list[str]) -> dict[str, dict[str, Any]]:
    """A report's thresholds: each test's model (``MODELS``) on its own measure."""
    models = {}
    for test in tests:
        model = dict(MODELS[test])
        if test in HISTORY_TESTS:
            model["max_sample_size"] = MAX_SAMPLE_SIZE
        models[measure_key(test)] = model
    return models


def run_body(
    project: str, series: Series, run: int, tests: list[str], first: bool
) -> dict[str, Any]:
    iterations = [
        json.dumps({series.name: {measure_key(test): {"value": value} for test in tests}})
        for value in series.points[run]
    ]
    body: dict[str, Any] = {
        "project": project,
        # Not main: there every threshold also looks back for change points
        # (docs/how-to/thresholds-alerts.md#change-points-that-look-back); here each test is
        # judged alone.
        "branch": "corpus",
        "testbed": "localhost",
        "results": iterations,
        "settings": {"adapter": "json", "fold": "mean"},
        "start_time": START.isoformat(),
        "end_time": START.isoformat(),
    }
    if first:
        body["thresholds"] = {"models": threshold_models(tests)}
    return body


def push(
    client: httpx.Client, project: str, corpus_: list[Series], tests: list[str]
) -> dict[str, tuple[str, int]]:
    """Every run of every series, interleaved as a CI would send them; report uuid ->
    (series, run)."""
    reports: dict[str, tuple[str, int]] = {}
    longest = max(len(s.points) for s in corpus_)
    first = True
    for run in range(longest):
        for series in corpus_:
            if run >= len(series.points):
                continue
            response = client.post("/v0/run", json=run_body(project, series, run, tests, first))
            if response.status_code >= 300:
                raise SystemExit(f"POST /v0/run: {response.status_code} {response.text[:300]}")
            first = False
            reports[response.json()["uuid"]] = (series.name, run)
    return reports


def alerts(client: httpx.Client, project: str) -> Iterator[dict[str, Any]]:
    page = 1
    while True:
        response = client.get(
            f"/v0/projects/{project}/alerts", params={"page": page, "per_page": 100}
        )
        response.raise_for_status()
        found = response.json()
        yield from found
        if len(found) < 100:
            return
        page += 1


@dataclasses.dataclass
class Score:
    detected: int = 0
    false_alarms: int = 0
    by_kind: dict[str, int] = dataclasses.field(default_factory=dict)
    """False alarms by kind of series."""
    repeats: int = 0
    steps: int = 0
    runs_to_detect: list[int] = dataclasses.field(default_factory=list)

    def line(self, test: str) -> str:
        precision = self.detected / max(1, self.detected + self.false_alarms)
        strict = self.detected / max(1, self.detected + self.false_alarms + self.repeats)
        recall = self.detected / max(1, self.steps)
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        runs = statistics.median(self.runs_to_detect) if self.runs_to_detect else float("nan")
        return (
            f"| {test} | {self.detected}/{self.steps} | {self.false_alarms} | {self.repeats} "
            f"| {precision:.2f} | {strict:.2f} | {recall:.2f} | {f1:.2f} | {runs:.1f} |"
        )


def score(corpus_: list[Series], raised: dict[str, list[int]], window: int) -> Score:
    """``raised``: series name -> the runs at which the test alerted on it."""
    result = Score()
    for series in corpus_:
        runs = sorted(raised.get(series.name, []))
        if series.step is None:
            result.false_alarms += len(runs)
            result.by_kind[series.kind] = result.by_kind.get(series.kind, 0) + len(runs)
            continue
        result.steps += 1
        detected_at = next((r for r in runs if series.step <= r <= series.step + window - 1), None)
        for r in runs:
            if detected_at is not None and r == detected_at:
                result.detected += 1
                result.runs_to_detect.append(r - series.step + 1)
            elif detected_at is not None and r > detected_at:
                result.repeats += 1
            else:
                result.false_alarms += 1
                result.by_kind["step"] = result.by_kind.get("step", 0) + 1
    return result


def raised_by_test(
    client: httpx.Client, project: str, reports: dict[str, tuple[str, int]], tests: list[str]
) -> dict[str, dict[str, list[int]]]:
    """Each test's alerts (its measure's): series name -> the runs whose reports raised them;
    ``reports``: report uuid -> (series, run)."""
    by_test: dict[str, dict[str, list[int]]] = {t: {} for t in tests}
    slugs = {measure_key(t): t for t in tests}
    for alert in alerts(client, project):
        test = slugs.get(alert["measure"]["slug"])
        raised_by = reports.get(alert["raised_by"])
        if test is None or raised_by is None:
            continue
        name, run = raised_by
        by_test[test].setdefault(name, []).append(run)
    return by_test


def print_scores(
    series: list[Series], by_test: dict[str, dict[str, list[int]]], window: int, label: str = ""
) -> None:
    """The table of scores, one row per test (its name followed by ``label``), and each
    test's false alarms by kind of series."""
    print(f"\nwindow: a step counts when alerted within {window} runs")
    print(
        "| test | steps detected | false alarms | repeats | precision "
        "| precision, repeats false | recall | F1 | runs to detect (median) |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    scores = {test: score(series, found, window) for test, found in by_test.items()}
    for test, found in scores.items():
        print(found.line(test + label))
    print("\nfalse alarms by kind of series (step: before the step or after a missed window)")
    for test, found in scores.items():
        kinds = ", ".join(f"{kind} {found.by_kind.get(kind, 0)}" for kind in KINDS)
        print(f"- {test}: {kinds}")


def corpus_arguments(
    parser: argparse.ArgumentParser, *, series: int, seed: int, max_points: int, tests: list[str]
) -> None:
    """The corpus's options and the scoring window, with these defaults."""
    parser.add_argument("--series", type=int, default=series)
    parser.add_argument("--seed", type=int, default=seed)
    parser.add_argument("--min-points", type=int, default=30)
    parser.add_argument("--max-points", type=int, default=max_points)
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--window", type=int, default=5, help="runs within which a step counts")
    parser.add_argument("--tests", nargs="+", choices=list(MODELS), default=tests)


def corpus_of(options: argparse.Namespace, said: str = "") -> list[Series]:
    """The corpus ``corpus_arguments`` asked for, its size printed (followed by ``said``)."""
    series = corpus(
        options.series, options.seed, options.min_points, options.max_points, options.iterations
    )
    runs = sum(len(s.points) for s in series)
    print(
        f"{len(series)} series ({sum(s.step is not None for s in series)} with a step), "
        f"{runs} runs of {options.iterations} samples, seed {options.seed}{said}"
    )
    return series


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    corpus_arguments(parser, series=60, seed=1, max_points=120, tests=list(MODELS))
    options = parser.parse_args()
    series = corpus_of(options)
    with (
        tempfile.TemporaryDirectory() as tmp,
        fresh_database("sqlite", Path(tmp)) as url,
        deploy(Path(tmp), url) as deployment,
        httpx.Client(
            base_url=deployment.server.url,
            headers={"Authorization": f"Bearer {deployment.server.token}"},
            timeout=120,
        ) as client,
    ):
        reports = push(client, deployment.project, series, options.tests)
        wait_until(
            lambda: not any(client.get("/v0/server/health").json()["queue"].values()),
            timeout=600,
            message="every report processed",
        )
        by_test = raised_by_test(client, deployment.project, reports, options.tests)
    print_scores(series, by_test, options.window)


if __name__ == "__main__":
    main()
