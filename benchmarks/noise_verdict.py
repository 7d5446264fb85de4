"""What the noise guard's verdict says about this machine: the calibration's CV (what was judged
before) beside its speed spread (what is judged now), and how often each calls a job noisy.

    .venv/bin/python -m benchmarks.noise_verdict [--calibrations 60] [--limit 0.05] [--quick]
        [--tune]

Each calibration is the runner's own (``NoiseProbe.calibrate`` on the job cores of
``CorePlan.detect()``: 512 rounds of SHA-256 over 64 KiB), taken back to back with a short pause
between, as an idle runner refreshes its "before". Run it idle, under load and with ``--tune``
(the host tuned for the block as ``runner up --tune=best-effort`` tunes it, and put back after)
to fill the rows of benchmarks/RESULTS.md; the load average at the start and the end is
printed, since on a shared machine that is what the figures depend on.

Printed: for CV and spread, the median, the 90th percentile and the largest value, and the share
of calibrations over ``--limit`` (the server's default noise limit, 5 %): the share of jobs a
runner here would have marked noisy under each rule, and how many the CV alone calls noisy.
"""

from __future__ import annotations

import argparse
import statistics
import time

from benchmarks.samples import load_average
from benchmarks.tuned_cores import job_core_plan
from benchrunner.runner.cores import CorePlan
from benchrunner.runner.noise_guard import ROUNDS, NoiseProbe


def describe(name: str, values: list[float], limit: float) -> str:
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    over = sum(v > limit for v in values)
    return (
        f"{name:>7}: median {statistics.median(values) * 100:7.2f}%  p90 {p90 * 100:7.2f}%  "
        f"max {ordered[-1] * 100:7.2f}%  over {limit * 100:.0f}%: {over}/{len(values)} "
        f"({over / len(values) * 100:.0f}%)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calibrations", type=int, default=60)
    parser.add_argument("--limit", type=float, default=0.05, help="the noise limit (0.05: 5 %%)")
    parser.add_argument("--pause", type=float, default=0.25, help="seconds between two")
    parser.add_argument("--quick", action="store_true", help="8 calibrations: a smoke check")
    parser.add_argument(
        "--tune", action="store_true", help="tune the host as runner up --tune=best-effort does"
    )
    options = parser.parse_args()
    count = 8 if options.quick else options.calibrations
    with job_core_plan(options.tune) as cores:
        calibrate(cores, count, options.limit, options.pause)


def calibrate(cores: CorePlan, count: int, limit: float, pause: float) -> None:
    probe = NoiseProbe(rounds=ROUNDS)
    print(f"cores: {cores.describe()}; load average at start: {load_average()}")
    cvs: list[float] = []
    spreads: list[float] = []
    for _ in range(count):
        calibration = probe.calibrate(cores)
        cvs.append(calibration.cv)
        spreads.append(calibration.spread or 0.0)
        time.sleep(pause)
    print(f"load average at end: {load_average()}; {count} calibrations of {ROUNDS} rounds")
    print(describe("cv", cvs, limit))
    print(describe("spread", spreads, limit))
    only_cv = sum(c > limit and s <= limit for c, s in zip(cvs, spreads, strict=True))
    print(f"noisy by the CV but not by the spread: {only_cv}/{count}")


if __name__ == "__main__":
    main()
