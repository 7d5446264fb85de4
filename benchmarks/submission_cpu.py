"""What a submission (``POST /v0/run`` of a no-op template job) costs the server's process.

A real server on a fresh database of each engine, no runner connected; ``--concurrency``
clients in this process submit ``--submissions`` jobs between them, as a CI fleet does. The
server's CPU time over those submissions (``/proc``, its threads included), divided by their
number, and the submissions per second. Each repetition starts new servers.

``--before SRC`` also runs the server from another checkout's ``src`` (a ``git worktree`` of
the code before a change), alternating with this one within each repetition (which goes
first alternates too), and prints after / before ratios of the medians. The database is
migrated by the code that runs on it.

    .venv/bin/python -m benchmarks.submission_cpu [--engines sqlite postgresql]
        [--submissions 2000] [--concurrency 8] [--repeat 5] [--before OLD_SRC]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

import httpx
from tests.databases import fresh_database
from tests.harness import deploy

from benchmarks.cpu_time import process_cpu_seconds
from benchmarks.round_trips import BODY
from benchmarks.server_env import UNCAPPED
from benchmarks.source_tree import admin_token, server_source

WARM_UP = 50


async def _submit(url: str, token: str, count: int, concurrency: int) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    left = count

    async def client(http: httpx.AsyncClient) -> None:
        nonlocal left
        while left > 0:
            left -= 1
            (await http.post("/v0/run", json=BODY)).raise_for_status()

    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as http:
        await asyncio.gather(*(client(http) for _ in range(concurrency)))


def measure(engine: str, submissions: int, concurrency: int) -> tuple[float, float]:
    """Submissions per second, and the server's CPU ms per submission."""
    with (
        tempfile.TemporaryDirectory() as tmp,
        fresh_database(engine, Path(tmp)) as url,
        deploy(Path(tmp), url, env=UNCAPPED, token=admin_token(url)) as deployment,
    ):
        server = deployment.server
        assert server.proc is not None
        asyncio.run(_submit(server.url, server.token, WARM_UP, concurrency))
        cpu_before = process_cpu_seconds(server.proc.pid)
        started = time.perf_counter()
        asyncio.run(_submit(server.url, server.token, submissions, concurrency))
        elapsed = time.perf_counter() - started
        cpu = process_cpu_seconds(server.proc.pid) - cpu_before
    return submissions / elapsed, 1000 * cpu / submissions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engines", nargs="+", default=["sqlite", "postgresql"])
    parser.add_argument("--submissions", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--before", default=None, help="another checkout's src directory")
    options = parser.parse_args()
    systems = ["after", "before"] if options.before else ["after"]
    for engine in options.engines:
        figures: dict[str, list[tuple[float, float]]] = {system: [] for system in systems}
        for repeat in range(options.repeat):
            for system in systems if repeat % 2 == 0 else systems[::-1]:
                with server_source(options.before if system == "before" else None):
                    figures[system].append(
                        measure(engine, options.submissions, options.concurrency)
                    )
        print(
            f"{engine}: {options.submissions} submissions from {options.concurrency} clients, "
            f"medians of {options.repeat}"
        )
        medians = {}
        for system, runs in figures.items():
            rate = statistics.median(r for r, _ in runs)
            cpu = statistics.median(c for _, c in runs)
            medians[system] = (rate, cpu)
            each = ", ".join(f"{c:.2f}" for _, c in runs)
            print(
                f"  {system:6} {rate:7.1f} submissions/s, server CPU {cpu:.2f} ms each "
                f"(runs: {each})"
            )
        if options.before:
            (rate_a, cpu_a), (rate_b, cpu_b) = medians["after"], medians["before"]
            wins = sum(
                a[1] < b[1] for a, b in zip(figures["after"], figures["before"], strict=True)
            )
            print(
                f"  after / before: submissions/s {rate_a / rate_b:.2f}x, server CPU "
                f"{cpu_a / cpu_b:.2f}x (after cheaper in {wins} of {options.repeat} pairs)"
            )


if __name__ == "__main__":
    main()
