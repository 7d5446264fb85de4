"""What the noise guard costs per job (docs/decisions/noise.md): a job's time on the runner with
the guard off, on as the agent runs it, and on without an idle calibration to take; interleaved.

    .venv/bin/python -m benchmarks.noise_guard_cost [--jobs 60] [--quick]

Each job is a template job on the process executor whose one iteration is the ``spin``
benchmark with almost no work (``benchmarks/spin.py``, work 1000: microseconds), run by the
real ``JobRun`` on the runner's job slot (``benchmarks/local_jobs.py``). The figure per job is
``JobFinished.duration``: from the slot picking the job up to its terminal message spooled.
Each round runs one job per variant, in an order shuffled per round:

    off        the spec's ``noise_guard`` false (as ``BENCHRUNNER_NOISE_GUARD=false``)
    on         as the agent: the "before" calibration taken while idle and handed to the job,
               so only the "after" one is on the job's way
    on, cold   no idle calibration to take (the agent had none, e.g. its refresh was
               interrupted): both calibrations on the job's way

Printed: medians, and the per-round difference against ``off`` (median and interquartile
range), plus one calibration (``NoiseProbe.calibrate``) timed alone (wall and the thread's CPU
time) and the idle calibration's CPU time per second of waiting (one refresh per
``noise_max_age``).
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tests.unit.claimed_jobs import claimed_job

from benchmarks.local_jobs import LocalRunner
from benchmarks.samples import load_average
from benchmarks.spin import TEMPLATE, compile_spin, spin_templates
from benchrunner.protocol import JsonClaimedJob
from benchrunner.runner.cores import CorePlan
from benchrunner.runner.executors import ProcessExecutor
from benchrunner.runner.options import DEFAULT_MAX_AGE

WORK = 1000


def job(guard: bool) -> JsonClaimedJob:
    claimed = claimed_job(
        {"timeout": 60, "iter": 1, "template": TEMPLATE, "args": {"work": WORK, "slowdown": 0.0}}
    )
    spec = claimed.spec.model_copy(update={"noise_guard": guard})
    return claimed.model_copy(update={"spec": spec})


def variants(runner: LocalRunner) -> dict[str, Callable[[], float]]:
    def timed(guard: bool, *, idle_before: bool = True) -> Callable[[], float]:
        def measure() -> float:
            message, duration = runner.run(job(guard), noise_guard=guard, idle_before=idle_before)
            if guard != (message.noise is not None):
                raise RuntimeError(f"noise guard {'missing' if guard else 'present'}: {message}")
            return duration

        return measure

    return {"off": timed(False), "on": timed(True), "on, cold": timed(True, idle_before=False)}


def spread(values: list[float]) -> str:
    q1, median, q3 = statistics.quantiles(values, n=4)
    return f"median {median * 1000:+.2f} ms (IQR {q1 * 1000:+.2f} .. {q3 * 1000:+.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=60, help="jobs per variant")
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--quick", action="store_true", help="8 jobs per variant: a smoke check")
    options = parser.parse_args()
    jobs = 8 if options.quick else options.jobs
    cores = CorePlan.detect()
    cores.pin_to_housekeeping()
    print(f"{cores.describe()}; {jobs} jobs per variant")
    print(f"load average at start: {load_average()}")
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        executor = ProcessExecutor(spin_templates(compile_spin(tmp)), cores=cores, workdir_root=tmp)
        runner = LocalRunner(executor, cores, tmp / "spool")
        measures = variants(runner)
        for measure in measures.values():
            measure()  # warm-up
        samples: dict[str, list[float]] = {name: [] for name in measures}
        order = list(measures)
        shuffle = random.Random(options.seed)
        for _ in range(jobs):
            shuffle.shuffle(order)
            for name in order:
                samples[name].append(measures[name]())
        alone: list[float] = []
        alone_cpu: list[float] = []
        for _ in range(jobs):
            started, started_cpu = time.perf_counter(), time.thread_time()
            runner.idle.probe.calibrate(cores)
            alone.append(time.perf_counter() - started)
            alone_cpu.append(time.thread_time() - started_cpu)
    print(f"load average at end:   {load_average()}")
    for name, values in samples.items():
        line = f"{name:<9} job median {statistics.median(values) * 1000:6.2f} ms"
        if name != "off":
            added = [a - b for a, b in zip(values, samples["off"], strict=True)]
            line += f"; added per job: {spread(added)}"
        print(line)
    print(f"one calibration alone, wall: {spread(alone).replace('+', '')}")
    print(f"one calibration alone, CPU:  {spread(alone_cpu).replace('+', '')}")
    print(
        f"idle calibration while waiting: one per {DEFAULT_MAX_AGE:g} s, "
        f"{statistics.median(alone_cpu) / DEFAULT_MAX_AGE:.2%} of the job core's CPU time"
    )


if __name__ == "__main__":
    main()
