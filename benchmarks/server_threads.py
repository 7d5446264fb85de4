"""Where the server's CPU per job goes by thread: the event loop, and the rest (on PostgreSQL the
executor threads that run the database's units, on SQLite the thread that syncs the WAL).

A real server on a fresh database of each engine and one real runner (``benchrunner runner
up``, process executor, the template job of ``queue_compare``), as ``queue_compare`` runs them.
After ``WARM_UP`` jobs, ``--jobs`` jobs are submitted one after another while the runner works;
the CPU time of each of the server's threads (``/proc/<pid>/task``) over them, divided by their
number. The event loop is the thread whose id is the process's.

    .venv/bin/python -m benchmarks.server_threads [--engines sqlite postgresql] [--jobs 1500]
"""

from __future__ import annotations

import argparse

from benchmarks.cpu_time import PROC, TICKS_PER_SECOND, stat_ticks
from benchmarks.queue_compare_benchrunner import database_watch, deployed, submit_and_drain

WARM_UP = 100


def threads_cpu(pid: int) -> dict[int, float]:
    """Thread id -> its CPU seconds so far, for every thread of ``pid`` alive now."""
    seconds: dict[int, float] = {}
    for task in (PROC / str(pid) / "task").iterdir():
        try:
            seconds[int(task.name)] = stat_ticks((task / "stat").read_text()) / TICKS_PER_SECOND
        except FileNotFoundError:  # the thread ended meanwhile
            continue
    return seconds


def measure(engine: str, jobs: int) -> tuple[float, float]:
    """(event loop, other threads) CPU ms per job on ``engine``."""
    with (
        deployed(engine, workers=1, mode="job", jobs=WARM_UP + jobs) as (url, deployment, _, api),
        database_watch(url) as watch,
    ):
        submit_and_drain(api, watch, WARM_UP)
        server = deployment.server.proc
        assert server is not None
        before = threads_cpu(server.pid)
        submit_and_drain(api, watch, jobs)
        after = threads_cpu(server.pid)
    spent = {tid: cpu - before.get(tid, 0.0) for tid, cpu in after.items()}
    loop = spent.pop(server.pid, 0.0)
    return loop * 1000 / jobs, sum(spent.values()) * 1000 / jobs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engines", nargs="+", default=["sqlite", "postgresql"])
    parser.add_argument("--jobs", type=int, default=1500)
    options = parser.parse_args()
    for engine in options.engines:
        loop, others = measure(engine, options.jobs)
        print(
            f"{engine}: server CPU per job {loop + others:.2f} ms: event loop {loop:.2f} ms, "
            f"other threads {others:.2f} ms ({options.jobs} jobs, one real runner)"
        )


if __name__ == "__main__":
    main()
