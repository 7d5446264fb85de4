"""Duet sensitivity (docs/decisions/noise.md): how often a plain A-then-B comparison and a duet
flag an injected slowdown of 0.5, 1, 2 and 5 %, and flag none (0 %: the false-positive rate),
on this machine as it is.

    .venv/bin/python -m benchmarks.duet_sensitivity [--trials 20] [--rounds 15] [--work 6000000]
        [--margins 0 0.005] [--save FILE] [--quick] [--tune]

The benchmark is ``benchmarks/spin.py``: fixed work, timed inside, the slowdown injected as
that much more work (template args ``work``, ``slowdown``). Everything runs through the
product's own code: template jobs on the process executor, run by the real ``JobRun`` on the
runner's job slot with the noise guard on (``benchmarks/local_jobs.py``).

duet   one job with ``duet`` = baseline (slowdown 0) and contender (the slowdown), ``rounds``
       rounds: ``runner/duet.py`` runs them in the order of ``core/duet_order.py``, and the
       server's ``server/duet_results.measure_duet`` (adapter ``json``; ``detection/duet.py``:
       95 % percentile bootstrap of the paired log ratios, 10,000 resamples) gives the verdict.
plain  two ordinary jobs of ``rounds`` iterations each, A then B: the same number of runs.
       Judged by Welch's t interval (95 %) of the mean log value, exponentiated to a ratio of
       geometric means (``benchmarks/samples.welch_ratio_interval``): the same kind of interval
       as the duet's, from the same runs unpaired.

Both measures the benchmark reports are judged: ``latency`` (wall time, the figure) and
``cpu-time`` (its CPU time: what is left of the noise without the waits for the core). Both
are judged by ``detection.duet.alert_limit`` at each ``--margins`` value: an alert when
the interval lies wholly beyond 1 +/- margin. At 0 % any alert is a false positive; at a
slowdown only an ``upper`` alert (B slower) counts as detected. Each trial runs every level
with both methods, in an order shuffled per trial, so the machine's drift hits all alike.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import statistics
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.unit.claimed_jobs import claimed_job

from benchmarks.local_jobs import LocalRunner
from benchmarks.samples import load_average, welch_ratio_interval
from benchmarks.spin import CPU, TEMPLATE, WALL, compile_spin, iteration_ns, spin_templates
from benchmarks.tuned_cores import job_core_plan
from benchrunner import adapters
from benchrunner.core.duet_order import BASELINE, CONTENDER
from benchrunner.detection.duet import alert_limit
from benchrunner.protocol import JsonClaimedJob, JsonJobOutput
from benchrunner.runner.cores import CorePlan
from benchrunner.runner.executors import ProcessExecutor
from benchrunner.server.processing.duet_results import measure_duet

LEVELS = (0.0, 0.005, 0.01, 0.02, 0.05)
METHODS = ("plain", "duet")
MEASURES = (WALL, CPU)
CONFIDENCE = 0.95


@dataclass(frozen=True)
class Verdict:
    method: str
    measure: str
    slowdown: float
    ratio: float
    lower: float
    upper: float
    baseline: tuple[float, ...] = ()
    contender: tuple[float, ...] = ()
    """The runs' values (ns) in order; a duet's by round, so paired."""


def flagged(verdict: Verdict, margin: float) -> bool:
    """A false positive (slowdown 0: an alert either way) or a detection (an ``upper`` alert)."""
    limit = alert_limit(verdict.lower, verdict.upper, margin)
    return limit is not None if verdict.slowdown == 0 else limit == "upper"


Cell = tuple[str, str, float]
"""(measure, method, slowdown)."""


def rates(verdicts: Iterable[Verdict], margin: float) -> dict[Cell, tuple[int, int]]:
    """(measure, method, slowdown) -> (flagged, trials)."""
    tally: dict[Cell, tuple[int, int]] = {}
    for verdict in verdicts:
        cell = (verdict.measure, verdict.method, verdict.slowdown)
        hits, trials = tally.get(cell, (0, 0))
        tally[cell] = (hits + flagged(verdict, margin), trials + 1)
    return tally


def spin(work: int, slowdown: float) -> dict[str, int | float | bool | str]:
    return {"work": work, "slowdown": slowdown}


def duet(runner: LocalRunner, work: int, slowdown: float, rounds: int, seed: int) -> list[Verdict]:
    job = claimed_job(
        {
            "timeout": 3600,
            "iter": rounds,
            "template": TEMPLATE,
            "args": spin(work, 0.0),
            "duet": {
                "baseline": {"args": spin(work, 0.0)},
                "contender": {"args": spin(work, slowdown)},
                "seed": seed,
                "confidence": CONFIDENCE,
            },
        }
    )
    message = runner.run(job)[0]
    assert job.config.duet is not None
    output = JsonJobOutput(results=message.results)
    result, error = measure_duet("json", output, adapters.Settings(), job.config.duet)
    if result is None:
        raise RuntimeError(f"no duet verdict: {error}")
    sides: dict[str, dict[int, dict[str, float]]] = {BASELINE: {}, CONTENDER: {}}
    for iteration in message.results:
        assert iteration.side is not None and iteration.round is not None
        sides[iteration.side][iteration.round] = iteration_ns(iteration)
    return [
        Verdict(
            "duet", e.measure, slowdown, e.ratio, e.lower, e.upper,
            tuple(sides[BASELINE][r][e.measure] for r in range(rounds)),
            tuple(sides[CONTENDER][r][e.measure] for r in range(rounds)),
        )
        for e in result.estimates
    ]  # fmt: skip


def plain_values(runner: LocalRunner, job: JsonClaimedJob) -> list[dict[str, float]]:
    return [iteration_ns(result) for result in runner.run(job)[0].results]


def plain(runner: LocalRunner, work: int, slowdown: float, rounds: int) -> list[Verdict]:
    def job(change: float) -> JsonClaimedJob:
        return claimed_job(
            {"timeout": 3600, "iter": rounds, "template": TEMPLATE, "args": spin(work, change)}
        )

    a = plain_values(runner, job(0.0))
    b = plain_values(runner, job(slowdown))
    verdicts = []
    for measure in MEASURES:
        baseline, contender = [v[measure] for v in a], [v[measure] for v in b]
        ratio, lower, upper = welch_ratio_interval(baseline, contender, confidence=CONFIDENCE)
        verdicts.append(
            Verdict(
                "plain", measure, slowdown, ratio, lower, upper, tuple(baseline), tuple(contender)
            )
        )
    return verdicts


def table(verdicts: Sequence[Verdict], margins: Sequence[float]) -> None:
    print("| measure | slowdown | method | "
          + " | ".join(f"flagged, margin {m:.1%}" for m in margins)
          + " | median ratio | median interval width |")  # fmt: skip
    print("| --- " * (5 + len(margins)) + "|")
    tallies = [rates(verdicts, margin) for margin in margins]
    for measure in MEASURES:
        for level in LEVELS:
            for method in METHODS:
                key = (measure, method, level)
                cell = [v for v in verdicts if (v.measure, v.method, v.slowdown) == key]
                if not cell:
                    continue
                shares = []
                for tally in tallies:
                    hits, trials = tally[key]
                    shares.append(f"{hits}/{trials} ({hits / trials:.0%})")
                ratio = statistics.median(v.ratio for v in cell)
                width = statistics.median(v.upper - v.lower for v in cell)
                print(f"| {measure} | {level:.1%} | {method} | " + " | ".join(shares)
                      + f" | {ratio:.4f} | {width:.2%} |")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=15, help="duet rounds = plain runs per side")
    parser.add_argument("--work", type=int, default=6_000_000, help="xorshift rounds per run")
    parser.add_argument("--margins", type=float, nargs="+", default=[0.0, 0.005])
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--save", type=Path, help="write every verdict and its runs as JSON")
    parser.add_argument("--quick", action="store_true", help="2 trials of 4 rounds: a smoke check")
    parser.add_argument(
        "--tune", action="store_true", help="tune the host as runner up --tune=best-effort does"
    )
    options = parser.parse_args()
    with job_core_plan(options.tune) as cores:
        run(options, cores)


def run(options: argparse.Namespace, cores: CorePlan) -> None:
    trials, rounds = (2, 4) if options.quick else (options.trials, options.rounds)
    print(f"{cores.describe()}; {trials} trials, {rounds} rounds, work {options.work}")
    started = time.monotonic()
    loads = [load_average()]
    verdicts: list[Verdict] = []
    draw = random.Random(options.seed)
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        executor = ProcessExecutor(spin_templates(compile_spin(tmp)), cores=cores, workdir_root=tmp)
        runner = LocalRunner(executor, cores, tmp / "spool")
        plain(runner, options.work, 0.0, 2)  # warm-up
        cells = [(level, method) for level in LEVELS for method in METHODS]
        for trial in range(trials):
            draw.shuffle(cells)
            for level, method in cells:
                if method == "duet":
                    seed = draw.randrange(2**63)
                    verdicts.extend(duet(runner, options.work, level, rounds, seed))
                else:
                    verdicts.extend(plain(runner, options.work, level, rounds))
            loads.append(load_average())
            print(f"trial {trial + 1}/{trials} done, load average {loads[-1]}", flush=True)
    minutes = (time.monotonic() - started) / 60
    print(f"{minutes:.1f} min; load average (1, 5, 15 min) per trial: {'; '.join(loads)}")
    table(verdicts, options.margins)
    if options.save is not None:
        options.save.write_text(json.dumps([dataclasses.asdict(v) for v in verdicts]))


if __name__ == "__main__":
    main()
