"""A server's start: the CPU time of ``benchrunner server`` from its exec until it first answers
``/v0/server/health``, on a SQLite database it migrated at an earlier start (a restart, as
every test's server starts on a migrated copy). Every start of a server pays it, and the test
suite starts some hundreds.

    .venv/bin/python -m benchmarks.server_start [--starts 10] [--before OLD_SRC]

``--before`` also starts the server of another checkout's ``src``, alternating with this one,
and prints the ratio of the medians.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx
from tests.harness import free_port, wait_until

from benchmarks.cpu_time import process_cpu_seconds
from benchmarks.samples import load_average
from benchmarks.source_tree import server_source

START_TIMEOUT = 120.0


def start_once(data_dir: Path) -> float:
    """One start on ``data_dir``: its CPU seconds until the first health answer."""
    port = free_port()
    command = [sys.executable, "-m", "benchrunner", "server", "--port", str(port)]
    server = subprocess.Popen(
        [*command, "--data-dir", str(data_dir)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        with httpx.Client(timeout=5.0) as client:

            def answered() -> bool:
                if server.poll() is not None:
                    raise SystemExit(f"the server exited with {server.returncode} as it started")
                try:
                    return client.get(f"http://127.0.0.1:{port}/v0/server/health").is_success
                except httpx.TransportError:
                    return False

            wait_until(answered, timeout=START_TIMEOUT, interval=0.02, message="its health")
        return process_cpu_seconds(server.pid)
    finally:
        server.terminate()
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=10)
    parser.add_argument("--before", metavar="OLD_SRC", help="another checkout's src")
    args = parser.parse_args()
    trees: dict[str, str | None] = {"this tree": None}
    if args.before:
        trees["before"] = args.before
    print(f"load average before: {load_average()}")
    with tempfile.TemporaryDirectory(prefix="server-start-") as scratch:
        data = {name: Path(scratch) / f"data-{index}" for index, name in enumerate(trees)}
        figures: dict[str, list[float]] = {name: [] for name in trees}
        for name, src in trees.items():  # the migration, not counted
            with server_source(src):
                start_once(data[name])
        for round_index in range(args.starts):
            order = list(trees.items())
            if round_index % 2:
                order.reverse()
            for name, src in order:
                with server_source(src):
                    figures[name].append(start_once(data[name]))
    print(f"load average after: {load_average()}")
    print(f"{args.starts} starts each; CPU seconds from exec to the first health answer")
    for name, values in figures.items():
        print(
            f"  {name}: median {statistics.median(values):.2f} s "
            f"(min {min(values):.2f}, max {max(values):.2f})"
        )
    if args.before:
        ratio = statistics.median(figures["this tree"]) / statistics.median(figures["before"])
        print(f"  this tree / before: {ratio:.2f}x")


if __name__ == "__main__":
    main()
