"""What the server's libraries cost alone: server CPU per request, per WebSocket message and per
committed statement, with none of benchrunner's work, to read a job's figures against.

``benchmarks/stack_floor_app.py`` is served by uvicorn as the server is (uvloop, httptools,
websockets' sans-I/O protocol, no access log), on a fresh PostgreSQL database. One client in
this process sends ``--count`` operations of each kind, one at a time (a job's path is a chain
of single steps, not a burst); the server process's CPU time over them (``/proc``: user and
system, its threads included), per operation. ``psycopg-here`` is the app's ``INSERT`` and
commit made by this process itself (its thread's CPU time): a statement's cost to its client
alone. The kinds alternate within each repetition.

    .venv/bin/python -m benchmarks.stack_floor [--count 3000] [--repeat 3]

Reading it: a whole job on PostgreSQL is one ``POST /v0/run``, the runner's channel messages
(``ready``, ``job``, ``running``, ``completed``, ``ack``) and about 7.5 statements in a few
commits (``round_trips``); the sum of those operations' floors is what the libraries alone
would cost the job.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import psycopg
import sqlalchemy as sa
from tests.databases import postgres_database
from websockets.sync.client import connect

from benchmarks.cpu_time import process_cpu_seconds
from benchmarks.stack_floor_app import INSERT

BODY = {"name": "floor", "value": 1}
SERVED = ("asgi", "starlette", "fastapi", "fastapi-db-thread", "fastapi-db-loop", "ws")
KINDS = (*SERVED, "psycopg-here")
READY_WITHIN = 60.0


@contextmanager
def _served(database_url: str, port: int) -> Iterator[subprocess.Popen[bytes]]:
    psycopg_url = sa.make_url(database_url).set(drivername="postgresql")
    env = {
        **os.environ,
        "STACK_FLOOR_DB": psycopg_url.render_as_string(hide_password=False),
        "PYTHONPATH": str(Path(__file__).resolve().parent.parent),
    }
    command = [
        sys.executable,
        "-m",
        "uvicorn",
        "benchmarks.stack_floor_app:app",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--loop",
        "uvloop",
        "--http",
        "httptools",
        "--ws",
        "websockets-sansio",
        "--no-access-log",
        "--log-level",
        "warning",
    ]
    process = subprocess.Popen(command, env=env)
    try:
        _wait_ready(f"http://127.0.0.1:{port}", process)
        yield process
    finally:
        process.terminate()
        process.wait(timeout=30)


def _wait_ready(url: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + READY_WITHIN
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the app exited with {process.returncode}")
        try:
            httpx.post(f"{url}/fastapi", json=BODY, timeout=5).raise_for_status()
            return
        except httpx.TransportError:
            time.sleep(0.05)
    raise RuntimeError(f"the app did not answer within {READY_WITHIN} s")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _statements_here(database_url: str) -> Callable[[int], None]:
    """``count`` of the app's ``INSERT`` and commit through psycopg in this process, measured
    by this thread's CPU time: a statement's cost to its client without any server around it."""
    psycopg_url = sa.make_url(database_url).set(drivername="postgresql")

    def statements(count: int) -> None:
        with psycopg.connect(psycopg_url.render_as_string(hide_password=False)) as conn:
            for _ in range(count):
                conn.execute(INSERT, ("floor", 1))
                conn.commit()

    return statements


def _operations(url: str, kind: str) -> Callable[[int], None]:
    """A function that performs ``count`` operations of ``kind``, one at a time."""
    if kind == "ws":

        def messages(count: int) -> None:
            with connect(url.replace("http", "ws") + "/ws") as socket:
                for _ in range(count):
                    socket.send('{"type":"heartbeat"}')
                    socket.recv()

        return messages

    def requests(count: int) -> None:
        with httpx.Client(base_url=url, timeout=30) as http:
            for _ in range(count):
                http.post(f"/{kind}", json=BODY).raise_for_status()

    return requests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=3000, help="operations per kind and run")
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    figures: dict[str, list[float]] = {kind: [] for kind in KINDS}
    with postgres_database() as database_url:
        port = _free_port()
        with _served(database_url, port) as process:
            url = f"http://127.0.0.1:{port}"
            for repeat in range(options.repeat):
                order = KINDS if repeat % 2 == 0 else KINDS[::-1]
                for kind in order:
                    here = kind not in SERVED
                    run = _statements_here(database_url) if here else _operations(url, kind)
                    run(max(50, options.count // 20))  # warm-up
                    cpu: Callable[[], float] = (
                        time.thread_time if here else lambda: process_cpu_seconds(process.pid)
                    )
                    before = cpu()
                    run(options.count)
                    figures[kind].append(1e6 * (cpu() - before) / options.count)
    print(f"server CPU per operation, medians of {options.repeat} runs of {options.count}:")
    print("| operation | µs | runs |")
    print("| --- | --- | --- |")
    for kind, runs in figures.items():
        each = ", ".join(f"{value:.0f}" for value in runs)
        print(f"| {kind} | {statistics.median(runs):.0f} | {each} |")


if __name__ == "__main__":
    main()
