"""benchrunner side by side with Procrastinate: throughput, pickup latency, CPU per job.

Three modes (``--mode``), each run for each system and worker count on a fresh database:

- ``job`` (the default), the whole job: benchrunner's workers are real ``benchrunner runner up``
  agents (process executor) running a shell and its ``date`` per job
  (``benchmarks/clock_job.py``), whose output becomes a report with one metric;
  Procrastinate's workers run an async task that starts the same shell and ``date``.
- ``queue``, the queue alone: dispatch and completion only. benchrunner's workers are channel
  connections that answer each job at once with no results (no process, no metric);
  Procrastinate's run an async no-op task.
- ``long``: benchrunner alone, jobs of ``--seconds`` that print a line a second and heartbeat
  throughout, as real benchmarks do: CPU per minute of a job's running time.

The ``job`` and ``queue`` modes measure two phases:

1. **pickup**: with every worker idle, one job is submitted, and when it is done (and the
   workers wait again) the next one; pickup is the job's own wall clock at its start (``queue``:
   benchrunner's channel receiving it) minus the client's clock just before the submit call
   (p50, p90). Until a job has started only its clock file (or the channel) is watched: no
   request and no query competes with the pickup;
2. **throughput**: ``--jobs`` jobs submitted by one client at its natural pace (one call after
   another) while the workers run; jobs/s from the first submission until every job is done
   (benchrunner: ``processed``; Procrastinate: ``succeeded``), which both sides learn the same
   way: a count of the jobs not done, read from the database every 0.1 s on one connection
   (not through benchrunner's server, whose CPU is measured).
   CPU per job over this phase: the ``benchrunner server`` process, every PostgreSQL process
   working for the run's database (its backends, and the cluster's own processes: the WAL
   writer, checkpointer and background writer, so run it on a cluster nothing else uses), and
   the workers.

The benchrunner server runs with its submission caps on, raised so that the run's jobs fit.
Pickup is measured apart because in the throughput phase the submitter outruns the workers and
a job's wait in the queue, not its pickup, would be measured. Procrastinate has no SQLite:
``--engine sqlite`` measures benchrunner alone.

    .venv/bin/python -m benchmarks.queue_compare [--mode job|queue|long]
        [--engine postgresql|sqlite] [--systems benchrunner procrastinate] [--workers 1 2]
        [--jobs 5000] [--samples 200] [--repeat 3] [--seconds 30] [--idle-seconds 10]
        [--sweep-interval S]
        [--py-spy PREFIX [--py-spy-rate HZ] [--py-spy-gil]] [--before OLD_SRC]

``--before`` also runs benchrunner from another checkout's ``src`` (servers and runners alike),
alternating with this one, and prints after/before ratios. In every mode the order of the
systems in a round is reversed in the next.

Procrastinate is an optional extra, installed only for this benchmark:

    .venv/bin/pip install --require-hashes --no-deps -r benchmarks/requirements-bench.lock
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import platform
import signal
import statistics
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from benchmarks.queue_figures import Figures, medians, row, table
from benchmarks.source_tree import server_source
from benchrunner.server.config import ServerSettings

if TYPE_CHECKING:
    from benchmarks import queue_compare_benchrunner

SYSTEMS = ("benchrunner", "procrastinate")
BEFORE = "benchrunner-before"
"""The system name of benchrunner run from ``--before``'s source tree."""
SERVER_SWEEP_INTERVAL: float = ServerSettings.model_fields["sweep_interval"].default
"""The sweep interval a server runs with unless told otherwise: what an operator measures."""
INSTALL = ".venv/bin/pip install --require-hashes --no-deps -r benchmarks/requirements-bench.lock"


def _profile(options: argparse.Namespace, run: str) -> queue_compare_benchrunner.Profile | None:
    """py-spy's recording of one run of the server and its runner agents (``--py-spy``), to
    ``<PREFIX>-<run>.txt``."""
    from benchmarks import queue_compare_benchrunner

    if not options.py_spy:
        return None
    return queue_compare_benchrunner.Profile(
        Path(f"{options.py_spy}-{run}.txt"), options.py_spy_rate, options.py_spy_gil
    )


def one_run(system: str, options: argparse.Namespace, workers: int, repeat: int) -> Figures:
    if system in ("benchrunner", BEFORE):
        from benchmarks import queue_compare_benchrunner

        profile = _profile(options, f"{system}-{options.engine}-{workers}w-r{repeat}")
        with server_source(options.before if system == BEFORE else None):
            figures = queue_compare_benchrunner.run(
                options.engine,
                workers,
                options.jobs,
                options.samples,
                options.warmup,
                profile,
                options.mode,
                options.sweep_interval,
            )
        return dataclasses.replace(figures, system=system)
    from benchmarks import queue_compare_procrastinate

    return queue_compare_procrastinate.run(
        workers, options.jobs, options.samples, options.warmup, options.mode
    )


def long_runs(options: argparse.Namespace) -> None:
    """``--mode long``: benchrunner's CPU per job-minute, medians of the repeats; with
    ``--before``, the other tree's runs alternate with this one's (which goes first alternates
    by round) and after/before ratios are printed."""
    from benchmarks import queue_compare_benchrunner

    systems = ["benchrunner", BEFORE] if options.before else ["benchrunner"]
    runs: dict[tuple[str, int], list[queue_compare_benchrunner.LongFigures]] = {}
    for repeat in range(1, options.repeat + 1):
        for workers in options.workers:
            order = systems if repeat % 2 else systems[::-1]
            for system in order:
                profile = _profile(options, f"idle-{system}-{options.engine}-{workers}w-r{repeat}")
                began = time.monotonic()
                with server_source(options.before if system == BEFORE else None):
                    one = queue_compare_benchrunner.run_long(
                        options.engine,
                        workers,
                        options.jobs,
                        options.seconds,
                        options.idle_seconds,
                        profile,
                        options.sweep_interval,
                    )
                runs.setdefault((system, workers), []).append(one)
                print(f"run {repeat} {system} ({time.monotonic() - began:.0f} s) {one}", flush=True)
    print(f"\nmedians of {options.repeat} run(s), CPU ms per job-minute:")
    print(
        "| system | engine | workers | jobs x seconds | server | PostgreSQL | runner agents "
        "| server idle, per minute |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    idle: dict[tuple[str, int], float] = {}
    for (system, workers), figures in runs.items():
        database = [f.database for f in figures if f.database is not None]
        postgresql = f"{statistics.median(database):.1f}" if database else "-"
        idle[(system, workers)] = statistics.median(f.server_idle for f in figures)
        print(
            f"| {system} | {options.engine} | {workers} | {options.jobs} x {options.seconds} "
            f"| {statistics.median(f.server for f in figures):.1f} | {postgresql} "
            f"| {statistics.median(f.runners for f in figures):.1f} "
            f"| {idle[(system, workers)]:.1f} |"
        )
    if options.before:
        for workers in options.workers:
            after, before = idle[("benchrunner", workers)], idle[(BEFORE, workers)]
            ratio = f"{after / before:.2f}" if before else "-"
            print(f"server idle after/before, {workers} worker(s): {ratio}")


def _stop(signum: int, _frame: object) -> None:
    # Unwind, so that servers, workers and databases of the run in progress are cleaned up.
    raise SystemExit(128 + signum)


def main() -> None:
    signal.signal(signal.SIGTERM, _stop)
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mode", choices=["job", "queue", "long"], default="job")
    parser.add_argument("--engine", choices=["postgresql", "sqlite"], default="postgresql")
    parser.add_argument("--systems", nargs="+", choices=SYSTEMS, default=list(SYSTEMS))
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--jobs", type=int, default=5000, help="jobs in the throughput phase")
    parser.add_argument("--samples", type=int, default=200, help="pickup samples per run")
    parser.add_argument("--warmup", type=int, default=10, help="pickup jobs not counted")
    parser.add_argument("--repeat", type=int, default=1, help="runs per figure (medians)")
    parser.add_argument("--seconds", type=int, default=30, help="--mode long: each job's length")
    parser.add_argument(
        "--idle-seconds",
        type=float,
        default=10.0,
        help="--mode long: how long the idle server is measured (and, with --py-spy, recorded "
        "to PREFIX-idle-<system>-<engine>-<workers>w-r<repeat>.txt); --jobs 0 measures only that",
    )
    parser.add_argument(
        "--py-spy",
        metavar="PREFIX",
        help="record the benchrunner server and its runner agents with py-spy (raw stacks) "
        "in each throughput phase, to PREFIX-<system>-<engine>-<workers>w-r<repeat>.txt "
        "and ...-runner<N>.txt "
        "(`python -m benchmarks.profile_shares FILE` sums them into parts)",
    )
    parser.add_argument(
        "--py-spy-rate", type=int, default=100, help="py-spy's samples per second (100)"
    )
    parser.add_argument(
        "--py-spy-gil",
        action="store_true",
        help="py-spy samples only the thread holding the GIL: the Python work, without the "
        "threads waiting on PostgreSQL or for work, and without uvloop's polling",
    )
    parser.add_argument(
        "--before",
        metavar="SRC",
        help="also run benchrunner from this src directory (e.g. a git worktree of an older "
        f"commit) as {BEFORE!r}, alternating with this checkout",
    )
    parser.add_argument(
        "--sweep-interval",
        type=float,
        default=SERVER_SWEEP_INTERVAL,
        help="the server's sweep interval, which also paces the bisection and confirmation "
        f"drivers (default: the server's own, {SERVER_SWEEP_INTERVAL:g} s; the test harness "
        "runs 0.5 s)",
    )
    options = parser.parse_args()
    if options.mode == "long":
        long_runs(options)
        return
    systems = [s for s in SYSTEMS if s in options.systems]
    if options.before:
        systems.insert(systems.index("benchrunner") if "benchrunner" in systems else 0, BEFORE)
    if options.engine == "sqlite" and "procrastinate" in systems:
        if options.systems != list(SYSTEMS):
            parser.error("Procrastinate has no SQLite engine: use --systems benchrunner")
        systems = [s for s in systems if s != "procrastinate"]
        print("sqlite: Procrastinate has no SQLite engine; measuring benchrunner alone")
    if "procrastinate" in systems and importlib.util.find_spec("procrastinate") is None:
        sys.exit(
            "Procrastinate is not installed: it is an optional extra for this benchmark only.\n"
            f"Install it with\n    {INSTALL}\nor measure benchrunner alone with "
            "--systems benchrunner."
        )
    print(
        f"{platform.node()}: {platform.processor() or platform.machine()}, "
        f"Python {platform.python_version()}; mode {options.mode}; engine {options.engine}; "
        f"{options.jobs} jobs, "
        f"{options.samples} pickup samples, {options.repeat} repeat(s)"
    )
    runs: dict[tuple[str, int], list[Figures]] = {}
    # Repeats outermost and systems innermost, so that drift in the machine's load hits
    # every configuration alike; which system goes first alternates by round.
    for repeat in range(1, options.repeat + 1):
        for workers in options.workers:
            for system in systems if repeat % 2 else systems[::-1]:
                began = time.monotonic()
                figures = one_run(system, options, workers, repeat)
                runs.setdefault((system, workers), []).append(figures)
                print(f"run {repeat} ({time.monotonic() - began:.0f} s) {row(figures)}", flush=True)
    results = [
        medians(runs[(system, workers)]) for workers in options.workers for system in systems
    ]
    print(f"\nmedians of {options.repeat} run(s):")
    print(table(results))


if __name__ == "__main__":
    main()
