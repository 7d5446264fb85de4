"""How often alerts are right on real runs of this machine, through a real runner.

A real server (SQLite) and one real ``benchrunner runner up`` agent (process executor, noise
guard on, as ``make up`` runs it) run ``benchmarks/spin.py``'s CPU-bound program as template
``spin``: fixed work timed inside, the regression injected as more work (``slowdown``). Each
series is a branch of its own: ``--runs`` jobs of ``--iterations`` iterations, the level
raised by ``--steps`` (e.g. 2 % and 5 %) from a known run on, or no step at all. Every series
is judged by each test of ``benchmarks.alert_accuracy.MODELS`` asked for, each through its own
threshold on ``--measure``: the wall time (``latency``, default) or the CPU time
(``cpu-time``, which other processes on the machine disturb far less).

Printed per test, with ``benchmarks.alert_accuracy``'s scoring: false alarms per 100 runs
(alerts before a step, or on a series without one), the regressions found within ``--window``
runs (2: the run of the step or the next) and found at all (a later first alert is late, but
right), repeats, and precision (found at all against false alarms). The series are
interleaved, so the machine's drift over the run hits every series alike, and advance in
lockstep, as a CI's commits do: the next run of every series is submitted once the last one's
jobs, and their confirmations, are done.

    .venv/bin/python -m benchmarks.alert_accuracy_runs [--series-per-step 2] [--runs 60]
        [--steps 0 0.02 0.05] [--work 3000000] [--iterations 5] [--window 2] [--seed 1]
        [--tests t_test change_point] [--measure latency|cpu-time]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import tempfile
from pathlib import Path
from typing import Any

import httpx
from tests.databases import fresh_database
from tests.harness import deploy, wait_until

from benchmarks.alert_accuracy import HISTORY_TESTS, MAX_SAMPLE_SIZE, MODELS, Series, alerts, score
from benchmarks.samples import load_average
from benchmarks.spin import CPU, TEMPLATE, WALL, compile_spin


def spin_template(binary: Path) -> str:
    """The server's (and the runner's) template ``spin``, as TOML; spin ignores its third
    argument, the run's commit."""
    return (
        f'\n[templates."{TEMPLATE}"]\n'
        f"command = {json.dumps([str(binary), '{work}', '{slowdown}', '{commit}'])}\n"
        "timeout = 600\n"
        f'[templates."{TEMPLATE}".args.work]\ntype = "int"\nmin = 1\nmax = 1000000000\n'
        f'[templates."{TEMPLATE}".args.slowdown]\ntype = "float"\nmin = 0\nmax = 10\n'
        f'[templates."{TEMPLATE}".args.commit]\ntype = "string"\n'
    )


def plan(
    steps: list[float], per_step: int, runs: int, rng: random.Random
) -> list[tuple[str, float, int | None]]:
    """(branch, step size, first run at the new level) of every series: the step falls in
    the second half, with a few runs after it."""
    series = []
    for size in steps:
        for index in range(per_step):
            at = rng.randint(runs // 2, runs - max(2, runs // 10)) if size else None
            series.append((f"step-{size * 100:g}pct-{index}", size, at))
    return series


def body(
    project: str,
    branch: str,
    slowdown: float,
    work: int,
    iterations: int,
    tests: list[str],
    first: bool,
    number: int,
    measure: str = WALL,
) -> dict[str, Any]:
    # Each run a version (commit) of its own, as each CI run is, and the commit among the
    # job's arguments, as an image per commit would differ: a confirmation then runs as a duet
    # of the run against the one before it, on every series (a step's or not).
    commit = hashlib.sha1(f"{branch}/{number}".encode(), usedforsecurity=False).hexdigest()
    run: dict[str, Any] = {
        "project": project,
        "branch": branch,
        "hash": commit,
        "testbed": "localhost",
        "spec": "small",
        "template": TEMPLATE,
        "args": {"work": work, "slowdown": slowdown, "commit": commit},
        "job": {"iter": iterations},
        "settings": {"adapter": "json", "fold": "median"},
    }
    if first:
        # One measure per test is not possible here (the program reports ``latency``): each
        # test judges its own copy of the series, on a branch of its own.
        (test,) = tests
        model = dict(MODELS[test])
        if test in HISTORY_TESTS:
            model["max_sample_size"] = MAX_SAMPLE_SIZE
        run["thresholds"] = {"models": {measure: model}}
    return run


def settled(client: httpx.Client, project: str) -> bool:
    """No job queued or running, and no alert held back for its confirmation runs (which
    are queued only once the crossing's job is processed)."""
    if any(client.get("/v0/server/health").json()["queue"].values()):
        return False
    pending = client.get(f"/v0/projects/{project}/alerts", params={"status": "pending"})
    pending.raise_for_status()
    return not pending.json()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--series-per-step", type=int, default=2)
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--steps", type=float, nargs="+", default=[0.0, 0.02, 0.05])
    parser.add_argument("--work", type=int, default=3_000_000, help="spin's rounds per iteration")
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--window", type=int, default=2)
    parser.add_argument("--measure", choices=[WALL, CPU], default=WALL, help="the judged one")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--tests", nargs="+", choices=list(MODELS), default=["t_test"])
    options = parser.parse_args()
    rng = random.Random(options.seed)
    layout = plan(options.steps, options.series_per_step, options.runs, rng)
    print(f"load average at start: {load_average()}")
    with (
        tempfile.TemporaryDirectory() as tmp,
        fresh_database("sqlite", Path(tmp)) as url,
    ):
        binary = compile_spin(Path(tmp))
        with (
            deploy(Path(tmp), url, extra_templates=spin_template(binary)) as deployment,
            httpx.Client(
                base_url=deployment.server.url,
                headers={"Authorization": f"Bearer {deployment.server.token}"},
                timeout=120,
            ) as client,
        ):
            deployment.runner_process("accuracy").start()
            wait_until(
                lambda: client.get("/v0/server/health").json()["waiting_runners"] == 1,
                timeout=120,
                message="the runner waiting",
            )
            reports: dict[str, tuple[str, int]] = {}
            for run in range(options.runs):
                for branch, size, at in layout:
                    slowdown = size if at is not None and run >= at else 0.0
                    for test in options.tests:
                        response = client.post(
                            "/v0/run",
                            json=body(
                                deployment.project,
                                f"{branch}-{test}",
                                slowdown,
                                options.work,
                                options.iterations,
                                [test],
                                run == 0,
                                run,
                                options.measure,
                            ),
                        )
                        if response.status_code >= 300:
                            raise SystemExit(
                                f"POST /v0/run: {response.status_code} {response.text[:300]}"
                            )
                        reports[response.json()["uuid"]] = (f"{branch}-{test}", run)
                wait_until(
                    lambda: settled(client, deployment.project),
                    timeout=1800.0,
                    interval=0.2,
                    message=f"run {run}'s jobs and confirmations done",
                )
            raised: dict[str, dict[str, list[int]]] = {t: {} for t in options.tests}
            for alert in alerts(client, deployment.project):
                found = reports.get(alert["raised_by"])
                if found is None:
                    continue
                name, run = found
                test = name.rsplit("-", 1)[1]
                raised[test].setdefault(name.rsplit("-", 1)[0], []).append(run)
    print(f"load average at end: {load_average()}")
    print(
        f"{len(layout)} series of {options.runs} runs, {options.iterations} iterations of "
        f"{options.work} rounds; a step counts when alerted within {options.window} runs"
    )
    series = [
        Series(branch, "step" if at else "none", [[]] * options.runs, at)
        for branch, _, at in layout
    ]
    # A step's first alert within ``--window`` runs is found in time; one later is still
    # right (the step is there), so precision counts it: only alerts before a step or on a
    # series without one are false.
    rest = options.runs
    print(
        f"| test | false alarms / 100 runs | regressions found within {options.window} runs "
        "| regressions found | repeats | precision |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    for test in options.tests:
        in_time = score(series, raised[test], options.window)
        result = score(series, raised[test], rest)
        runs = len(series) * options.runs
        precision = result.detected / max(1, result.detected + result.false_alarms)
        print(
            f"| {test} | {result.false_alarms * 100 / runs:.1f} "
            f"| {in_time.detected}/{in_time.steps} | {result.detected}/{result.steps} "
            f"| {result.repeats} | {precision:.2f} |"
        )
    for size in sorted({size for _, size, at in layout if at is not None}):
        of_size = [s for s, (_, found, _) in zip(series, layout, strict=True) if found == size]
        found_by_test = ", ".join(
            f"{test} {score(of_size, raised[test], options.window).detected}/{len(of_size)} "
            f"within {options.window} runs, {score(of_size, raised[test], rest).detected} at all"
            for test in options.tests
        )
        print(f"steps of {size * 100:g} %: {found_by_test}")


if __name__ == "__main__":
    main()
