"""The runner's footprint on a CPU-bound benchmark (docs/explanation/executors.md): the same
benchmark run directly and under the runner, on the same core, interleaved; the figure is the
time the benchmark reports itself (what a user's harness would report), not the job's
overhead.

    .venv/bin/python -m benchmarks.footprint [--runs 40] [--work 25000000] [--quick]

The benchmark is ``benchmarks/spin.py`` (fixed integer work timed by CLOCK_MONOTONIC inside).
Each round runs it once in each mode, in an order shuffled per round (seeded):

    direct    ``taskset -c CORE spin`` from this process (pinned, as the runner pins itself,
              to the housekeeping core), in this process's session
    direct-session  the same in a session of its own (``setsid``), as the executors start
              every job: with the kernel's autogroup scheduling on
              (``/proc/sys/kernel/sched_autogroup_enabled``) a session is a scheduling group,
              so on a busy core it decides the share of CPU the benchmark gets
    direct-on-core  forked, in a session of its own, by a thread moved onto the job core for
              the spawn (as the executors do, ``CorePlan.job_affinity``), no ``taskset``: the
              new process starts on the job core's run queue instead of migrating to it
    process   a template job on the process executor, one iteration, run by ``JobRun`` on the
              runner's job slot with the noise guard on (``benchmarks/local_jobs.py``)
    sandbox   an image job (busybox + the static ``spin``) on the runc sandbox executor, the
              same way; needs root and runc (left out, and said so, without them)

Printed per mode: median, CV, and for each runner mode against each direct one: the ratio of
medians, the geometric mean of the per-round ratios with its 95 % bootstrap interval
(``detection.duet.ratio_interval``), and the CV difference in points; for the wall time the
benchmark reports (``latency``, the figure) and for its CPU time (``cpu-time``, which leaves
out the waits for the core, so shows what the runner changes in the benchmark's own run).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from tests.oci_layout import TarEntry, busybox_image, gzip_bytes, tar_bytes, write_layout
from tests.oci_registry import local_registry
from tests.unit.claimed_jobs import claimed_job

from benchmarks.local_jobs import LocalRunner
from benchmarks.samples import cv, load_average
from benchmarks.sandbox import claimed
from benchmarks.spin import (
    CPU,
    TEMPLATE,
    WALL,
    compile_spin,
    iteration_ns,
    reported_ns,
    spin_templates,
)
from benchrunner.detection.duet import ratio_interval
from benchrunner.protocol import JsonClaimedJob
from benchrunner.runner.cores import CorePlan
from benchrunner.runner.executors import ProcessExecutor
from benchrunner.runner.executors.sandbox import SandboxExecutor

Measure = Callable[[], dict[str, float]]
DIRECT_MODES = ("direct", "direct-session", "direct-on-core")
RUNNER_MODES = ("process", "sandbox")


def under_runner(runner: LocalRunner, make_job: Callable[[], JsonClaimedJob]) -> Measure:
    def measure() -> dict[str, float]:
        (result,) = runner.run(make_job())[0].results
        return iteration_ns(result)

    return measure


def direct(binary: Path, work: int, core: int, *, own_session: bool) -> Measure:
    def measure() -> dict[str, float]:
        done = subprocess.run(
            ["taskset", "-c", str(core), str(binary), str(work), "0"],
            check=True, capture_output=True, text=True, start_new_session=own_session,
        )  # fmt: skip
        return reported_ns(done.stdout)

    return measure


def direct_from_core(binary: Path, work: int, cores: CorePlan) -> Measure:
    """Started as the executors start a job: forked by a thread moved onto the job core for
    the spawn, in a session of its own; no ``taskset``, no runner."""

    def measure() -> dict[str, float]:
        with cores.job_affinity():
            done = subprocess.run(
                [str(binary), str(work), "0"],
                check=True, capture_output=True, text=True, start_new_session=True,
            )  # fmt: skip
        return reported_ns(done.stdout)

    return measure


def sandbox_available() -> str | None:
    """Why the sandbox mode cannot run here, or None."""
    if os.geteuid() != 0:
        return "needs root"
    if shutil.which("runc") is None:
        return "needs runc"
    return None


def report(samples: dict[str, list[float]], measure: str) -> None:
    print(f"{measure}:")
    for mode, values in samples.items():
        print(
            f"  {mode:<15} median {statistics.median(values) / 1e6:7.2f} ms, cv {cv(values):6.2%}"
        )
    for mode in RUNNER_MODES:
        for reference in DIRECT_MODES:
            if mode not in samples:
                continue
            values, base = samples[mode], samples[reference]
            ratios = [value / ref for value, ref in zip(values, base, strict=True)]
            centre, low, high = ratio_interval(ratios, confidence=0.95, resamples=10_000, seed=1)
            print(
                f"  {mode} vs {reference}: median ratio "
                f"{statistics.median(values) / statistics.median(base) - 1:+.2%},"
                f" paired {centre - 1:+.2%} [{low - 1:+.2%}, {high - 1:+.2%}],"
                f" cv {(cv(values) - cv(base)) * 100:+.2f} points"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--work", type=int, default=25_000_000, help="xorshift rounds per run")
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--quick", action="store_true", help="5 runs: a smoke check")
    options = parser.parse_args()
    runs = 5 if options.quick else options.runs
    cores = CorePlan.detect()
    if not cores.pinned:
        raise SystemExit("needs two cores or more: one for the runner, one for the benchmark")
    core = min(cores.job_cores)
    cores.pin_to_housekeeping()
    print(f"{cores.describe()}; {runs} runs per mode, work {options.work}")
    print(f"load average at start: {load_average()}")
    with tempfile.TemporaryDirectory() as name, local_registry() as registry:
        tmp = Path(name)
        binary = compile_spin(tmp)
        args = {"work": options.work, "slowdown": 0.0}
        process = LocalRunner(
            ProcessExecutor(spin_templates(binary), cores=cores, workdir_root=tmp), cores, tmp / "p"
        )
        modes: dict[str, Measure] = {
            "direct": direct(binary, options.work, core, own_session=False),
            "direct-session": direct(binary, options.work, core, own_session=True),
            "direct-on-core": direct_from_core(binary, options.work, cores),
            "process": under_runner(
                process,
                lambda: claimed_job(
                    {"timeout": 600, "iter": 1, "template": TEMPLATE, "args": args}
                ),
            ),
        }
        why_not = sandbox_available()
        if why_not is None:
            image = busybox_image()
            image.layers.append(
                gzip_bytes(tar_bytes([TarEntry("spin", binary.read_bytes(), mode=0o755)]))
            )
            layout = write_layout(tmp / "layout", [image])
            registry.serve(layout)
            executor = SandboxExecutor(
                registry_url=lambda: registry.url, work_root=tmp / "sandbox", cores=cores
            )
            sandbox = LocalRunner(executor, cores, tmp / "s")
            entrypoint = ["/spin", str(options.work), "0"]
            modes["sandbox"] = under_runner(sandbox, lambda: claimed(layout.digest, entrypoint))
        else:
            print(f"sandbox mode left out: {why_not}")
        for warm_up in modes.values():  # page cache, image pull, frequency
            warm_up()
        samples: dict[str, list[dict[str, float]]] = {mode: [] for mode in modes}
        order = list(modes)
        shuffle = random.Random(options.seed)
        for _ in range(runs):
            shuffle.shuffle(order)
            for mode in order:
                samples[mode].append(modes[mode]())
    print(f"load average at end:   {load_average()}")
    for name in (WALL, CPU):
        report({mode: [run[name] for run in taken] for mode, taken in samples.items()}, name)


if __name__ == "__main__":
    main()
