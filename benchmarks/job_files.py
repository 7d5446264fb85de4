"""What a job's files cost the runner, per job: its in-flight records (``runner/inflight.py``:
the record before its process starts, ``job``; its process group once it runs, ``group``; the
record forgotten at the end) and its result in the spool (``runner/spool.py``: written durably,
then deleted at the server's ``ack``), as the runner writes them, in a directory of TMPDIR's
filesystem (``--dir``).

    .venv/bin/python -m benchmarks.job_files [--jobs 1000] [--rounds 3]
        [--before OLD_SRC] [--dir DIR]

Printed per round and source tree: for the in-flight records, the process's CPU time per job
(user + system: the kernel's file work included), the wall time per job and the p50 of ``job``
alone (on the way of the job's start); for the spool, CPU and wall time per job (the wall time
is mostly the two ``fsync``). ``--before`` runs another checkout's ``src`` too, alternating with
this one (which goes first alternates by round), each in a fresh process and directory.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from benchmarks.samples import load_average
from benchrunner.protocol import Completed, IterationResult
from benchrunner.runner.inflight import InFlight
from benchrunner.runner.spool import Spool

WARMUP = 200


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure(jobs: int, directory: Path) -> dict[str, float]:
    return {**in_flight_records(jobs, directory / "in-flight"), **spool(jobs, directory / "spool")}


def spool(jobs: int, directory: Path) -> dict[str, float]:
    results = Spool(directory)
    output = IterationResult(exit_code=0, stdout="Mon Nov 30 09:00:00 UTC 2026\n", stderr="")

    def one() -> None:
        message = Completed(job=uuid.uuid4(), results=[output])
        results.write(message)
        results.delete(message.job)

    for _ in range(WARMUP):
        one()
    cpu, begun = _cpu(), time.perf_counter()
    for _ in range(jobs):
        one()
    return {
        "spool_cpu_us": (_cpu() - cpu) / jobs * 1e6,
        "spool_wall_us": (time.perf_counter() - begun) / jobs * 1e6,
    }


def in_flight_records(jobs: int, directory: Path) -> dict[str, float]:
    in_flight = InFlight(directory)
    pid = os.getpid()
    before_start: list[float] = []

    def one() -> None:
        job = uuid.uuid4()
        begun = time.perf_counter()
        in_flight.job(job)
        before_start.append(time.perf_counter() - begun)
        in_flight.group(job, pid)
        in_flight.forget(job)

    for _ in range(WARMUP):
        one()
    before_start.clear()
    cpu, begun = _cpu(), time.perf_counter()
    for _ in range(jobs):
        one()
    return {
        "in_flight_cpu_us": (_cpu() - cpu) / jobs * 1e6,
        "in_flight_wall_us": (time.perf_counter() - begun) / jobs * 1e6,
        "job_p50_us": statistics.median(before_start) * 1e6,
    }


def run_tree(src: Path, jobs: int, root: Path | None) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="job-files-", dir=root) as name:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(src), str(Path.cwd())])}
        result = subprocess.run(
            [sys.executable, "-m", "benchmarks.job_files", "--child", name, str(jobs)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        figures: dict[str, float] = json.loads(result.stdout)
        return figures


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        print(json.dumps(measure(int(sys.argv[3]), Path(sys.argv[2]))))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--before", type=Path, help="another checkout's src, run alternately")
    parser.add_argument("--dir", type=Path, help="where the records are written (TMPDIR)")
    options = parser.parse_args()
    trees = {"after": Path("src").resolve()}
    if options.before is not None:
        trees["before"] = options.before.resolve()
    print(f"{options.jobs} jobs per round; load average at start: {load_average()}")
    results: dict[str, list[dict[str, float]]] = {label: [] for label in trees}
    for round_number in range(options.rounds):
        order = list(trees) if round_number % 2 == 0 else list(reversed(trees))
        for label in order:
            figures = run_tree(trees[label], options.jobs, options.dir)
            results[label].append(figures)
            shown = " ".join(f"{key} {value:.0f}" for key, value in figures.items())
            print(f"round {round_number + 1} {label}: {shown}")
    print(
        "| tree | in-flight CPU µs/job | wall µs/job | `job` p50 µs"
        " | spool CPU µs/job | wall µs/job |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    for label, rounds in results.items():
        medians = [statistics.median(r[key] for r in rounds) for key in rounds[0]]
        print(f"| {label} | " + " | ".join(f"{value:.0f}" for value in medians) + " |")


if __name__ == "__main__":
    main()
