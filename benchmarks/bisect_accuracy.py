"""How many jobs and how long a bisection takes to name the commit behind a small step, and how
often it names the right one, through a real server and a real runner.

A real server (SQLite) and one real ``benchrunner runner up`` agent (process executor) run
``benchmarks/spin.py``'s CPU-bound program as template ``spin.bisect``: its ``{commit}``
argument names a file of a table this script writes, holding the commit's work and slowdown;
from one commit on (the culprit, its position random per trial) the slowdown is the step. Each
trial is one ``POST /v0/projects/{p}/bisections`` over ``--commits`` candidates (bad the
last), judged by the server's own duet jobs; the trials of every (commits, step) interleave,
so the machine's drift over the run hits each alike. A bisection's margin is half the step
unless ``--margin`` says otherwise: at the API's default of 0.02 a 2 % step would sit on the
margin itself, its check's interval beyond ``1 + margin`` only by chance
(docs/how-to/bisect.md, "How it searches").

Printed per (commits, step): trials, right / wrong / undecided (no culprit named), the share
right, the median of the jobs a bisection used and of its wall time; the load average at the
start and the end.

    .venv/bin/python -m benchmarks.bisect_accuracy [--commits 16 64] [--steps 0.02 0.05]
        [--trials 20] [--work 3000000] [--measure latency] [--budget 40] [--seed 1]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import httpx
from tests.databases import fresh_database
from tests.harness import deploy, wait_progressing, wait_until

from benchmarks.samples import load_average
from benchmarks.spin import CPU, WALL, compile_spin

TEMPLATE = "spin.bisect"
BENCHMARK = "spin"
Outcome = Literal["right", "wrong", "undecided"]


def bisect_template(binary: Path) -> str:
    """The server's (and the runner's) template ``spin.bisect``, as TOML: the commit's file in
    ``{table}`` gives spin's two arguments (work, slowdown), read by the shell's builtins."""
    script = 'read -r work slowdown < "$2/$3" && exec "$1" "$work" "$slowdown"'
    command = ["sh", "-c", script, "spin-bisect", str(binary), "{table}", "{commit}"]
    return (
        f'\n[templates."{TEMPLATE}"]\n'
        f"command = {json.dumps(command)}\n"
        "timeout = 600\n"
        f'[templates."{TEMPLATE}".args.table]\ntype = "string"\n'
        f'[templates."{TEMPLATE}".args.commit]\ntype = "string"\n'
    )


@dataclass(frozen=True)
class Case:
    """One trial's question: ``commits`` (good first, then the candidates, bad last) and the
    index in it of the first one at the new level."""

    commits: tuple[str, ...]
    culprit: int

    @property
    def good(self) -> str:
        return self.commits[0]

    @property
    def bad(self) -> str:
        return self.commits[-1]

    @property
    def candidates(self) -> list[str]:
        return list(self.commits[1:])


def make_case(candidates: int, rng: random.Random) -> Case:
    """Good and ``candidates`` commits with hashes of their own, the culprit any candidate
    (bad itself included), drawn from ``rng``."""
    commits: list[str] = []
    while len(commits) < candidates + 1:
        name = rng.randbytes(20).hex()
        if name not in commits:
            commits.append(name)
    return Case(tuple(commits), rng.randint(1, candidates))


def table_rows(case: Case, work: int, step: float) -> dict[str, str]:
    """Each commit's file content: spin's work and slowdown (``step`` from the culprit on)."""
    return {
        commit: f"{work} {step if index >= case.culprit else 0.0}\n"
        for index, commit in enumerate(case.commits)
    }


def write_table(directory: Path, case: Case, work: int, step: float) -> Path:
    directory.mkdir(parents=True)
    for commit, line in table_rows(case, work, step).items():
        (directory / commit).write_text(line)
    return directory


def outcome(case: Case, named: str | None) -> Outcome:
    if named is None:
        return "undecided"
    return "right" if named == case.commits[case.culprit] else "wrong"


@dataclass(frozen=True)
class Trial:
    commits: int
    step: float
    outcome: Outcome
    jobs: int
    seconds: float


@dataclass(frozen=True)
class Summary:
    commits: int
    step: float
    trials: int
    right: int
    wrong: int
    undecided: int
    median_jobs: float
    median_seconds: float

    @property
    def share_right(self) -> float:
        return self.right / self.trials if self.trials else 0.0


def summarize(trials: Sequence[Trial]) -> list[Summary]:
    """One summary per (commits, step), in the order they first appear."""
    groups: dict[tuple[int, float], list[Trial]] = {}
    for trial in trials:
        groups.setdefault((trial.commits, trial.step), []).append(trial)
    return [
        Summary(
            commits=commits,
            step=step,
            trials=len(group),
            right=sum(1 for t in group if t.outcome == "right"),
            wrong=sum(1 for t in group if t.outcome == "wrong"),
            undecided=sum(1 for t in group if t.outcome == "undecided"),
            median_jobs=statistics.median(t.jobs for t in group),
            median_seconds=statistics.median(t.seconds for t in group),
        )
        for (commits, step), group in groups.items()
    ]


def table(summaries: Sequence[Summary]) -> list[str]:
    lines = [
        "| commits | step | trials | right / wrong / undecided | share right | median jobs "
        "| median wall time (s) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for s in summaries:
        lines.append(
            f"| {s.commits} | {s.step * 100:g} % | {s.trials} | {s.right} / {s.wrong} / "
            f"{s.undecided} | {s.share_right:.2f} | {s.median_jobs:g} | {s.median_seconds:.0f} |"
        )
    return lines


def bisection_body(
    case: Case, tables: Path, measure: str, margin: float, budget: int, spec: str
) -> dict[str, Any]:
    return {
        "benchmarks": [BENCHMARK],
        "measure": measure,
        "good": case.good,
        "bad": case.bad,
        "candidates": case.candidates,
        "template": TEMPLATE,
        "args": {"table": str(tables), "commit": "{commit}"},
        "adapter": "json",
        "margin": margin,
        "job_budget": budget,
        "spec": spec,
    }


def answer(result: dict[str, Any] | None) -> tuple[str | None, str]:
    """An ended bisection's ``result``: the commit it named (None: none) and why it named
    none (empty when it named one)."""
    culprit = (result or {}).get("culprit")
    if culprit:
        return str(culprit["commit"]), ""
    return None, str((result or {}).get("reason") or "no result")


def run_trial(
    client: httpx.Client, project: str, body: dict[str, Any], stall: float
) -> tuple[str | None, str, int, float]:
    """Start one bisection and wait for its end: (culprit or None, why none, jobs used,
    seconds)."""
    started = time.monotonic()
    response = client.post(f"/v0/projects/{project}/bisections", json=body)
    if response.status_code != 201:
        raise SystemExit(f"POST bisections: {response.status_code} {response.text[:300]}")
    url = f"/v0/projects/{project}/bisections/{response.json()['uuid']}"

    def ended() -> dict[str, Any] | None:
        found: dict[str, Any] = client.get(url).json()
        return found if found["state"] != "running" else None

    def progress() -> object:
        found = client.get(url).json()
        return found["jobs_used"], [(s["status"], s["rounds"]) for s in found["steps"]]

    done = wait_progressing(ended, progress, stall=stall, interval=1.0, message=f"{url} to end")
    seconds = time.monotonic() - started
    named, reason = answer(done.get("result"))
    return named, reason, int(done["jobs_used"]), seconds


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--commits", type=int, nargs="+", default=[16, 64])
    parser.add_argument("--steps", type=float, nargs="+", default=[0.02, 0.05])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--work", type=int, default=3_000_000, help="spin's rounds per run")
    parser.add_argument("--measure", choices=[WALL, CPU], default=WALL)
    parser.add_argument("--margin", type=float, default=None, help="default: half the step")
    parser.add_argument("--budget", type=int, default=40, help="jobs a bisection may use")
    parser.add_argument("--stall", type=float, default=900.0, help="s without progress: fail")
    parser.add_argument("--seed", type=int, default=1)
    options = parser.parse_args()
    rng = random.Random(options.seed)
    plan = [
        (commits, step, make_case(commits, rng))
        for _ in range(options.trials)
        for commits in options.commits
        for step in options.steps
    ]
    print(f"load average at start: {load_average()}", flush=True)
    trials: list[Trial] = []
    with (
        tempfile.TemporaryDirectory() as tmp,
        fresh_database("sqlite", Path(tmp)) as url,
    ):
        binary = compile_spin(Path(tmp))
        with (
            deploy(Path(tmp), url, extra_templates=bisect_template(binary)) as deployment,
            httpx.Client(
                base_url=deployment.server.url,
                headers={"Authorization": f"Bearer {deployment.server.token}"},
                timeout=120,
            ) as client,
        ):
            deployment.runner_process("bisect").start()
            wait_until(
                lambda: client.get("/v0/server/health").json()["waiting_runners"] == 1,
                timeout=120,
                message="the runner waiting",
            )
            for number, (commits, step, case) in enumerate(plan):
                tables = write_table(Path(tmp) / f"table-{number}", case, options.work, step)
                margin = options.margin if options.margin is not None else step / 2
                body = bisection_body(
                    case, tables, options.measure, margin, options.budget, deployment.spec
                )
                named, reason, jobs, seconds = run_trial(
                    client, deployment.project, body, options.stall
                )
                trial = Trial(commits, step, outcome(case, named), jobs, seconds)
                trials.append(trial)
                print(
                    f"trial {number + 1}/{len(plan)}: {commits} commits, step {step:g}, "
                    f"culprit at {case.culprit}: {trial.outcome}, {jobs} jobs, {seconds:.0f} s"
                    + (f" ({reason})" if reason else ""),
                    flush=True,
                )
    print(f"load average at end: {load_average()}")
    print(
        f"{options.trials} trials per row, spin {options.work} rounds, measure "
        f"{options.measure}, margin {options.margin or 'half the step'}, budget {options.budget}"
    )
    print("\n".join(table(summarize(trials))))


if __name__ == "__main__":
    main()
