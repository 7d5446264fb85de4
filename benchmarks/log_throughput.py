"""Live logs (docs/explanation/live-logs.md): throughput to a following client, and what
streaming costs others.

One real server (SQLite by default) and real runner processes (process executor).

throughput  A job writes ``--mib`` MiB to stdout as fast as it can (1 KiB lines); a client
            follows its log (``GET .../logs/follow``, server-sent events) from submission to
            the ``end`` event. MB/s = bytes the client received / (its last byte - its first
            byte); also the bytes the runner dropped (the job outran the stream: gap markers)
            and the job's own run time.
pickup      Client clock before ``POST /v0/run`` -> ``job`` message at an idle raw channel
            (as ``pickup_latency.py``), p50/p90/p99 over ``--samples``; then a burst of
            ``--burst`` jobs submitted at once and completed by that channel (jobs/s). Once
            with nothing else running, once while a chatty job (printing as fast as it can)
            streams its log from another runner, and once beside the same job writing to
            ``/dev/null`` instead (as busy, nothing to stream): the control.

    .venv/bin/python -m benchmarks.log_throughput [--mib 32] [--samples 200] [--burst 200]
        [--engine sqlite|postgresql] [--log-max-mib 1024]
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import re
import signal
import statistics
import tempfile
import threading
import time
from collections.abc import Iterator
from http.client import HTTPConnection
from pathlib import Path

from tests.databases import fresh_database
from tests.harness import TEST_TEMPLATES, Deployment, deploy, wait_until
from websockets.exceptions import ConnectionClosed

from benchrunner.api.jobs import JobLogPiece

FLOOD_SCRIPT = (
    "import sys; block = (b'x' * 1023 + b'\\n') * 1024; "
    "w = (sys.stdout.buffer if sys.argv[2] == '-' else open(sys.argv[2], 'wb')).write; "
    "n = int(sys.argv[1]); [w(block) for _ in (range(n) if n else iter(int, 1))]; print('{}')"
)
FLOOD = f"""
[templates."bench.flood"]
description = "Write MiB mebibytes (0: forever) of 1 KiB lines as fast as it can to stdout or sink"
command = {json.dumps(["python3", "-c", FLOOD_SCRIPT, "{mib}", "{sink}"])}
timeout = 600

[templates."bench.flood".args.mib]
type = "int"
min = 0
max = 100000

[templates."bench.flood".args.sink]
type = "string"
default = "-"
"""


GAP = re.compile(r"\[benchrunner: (\d+) bytes of \w+ lost\]")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


@contextlib.contextmanager
def deployment_for(engine: str, tmp: Path, log_max_mib: int | None) -> Iterator[Deployment]:
    if log_max_mib is not None:
        os.environ["BENCHRUNNER_JOB_LOG_MAX_BYTES"] = str(log_max_mib << 20)
    with (
        fresh_database(engine, tmp) as url,
        deploy(tmp, url, heartbeat_timeout=60.0) as deployment,
    ):
        # Templates are read at start: the server starts again with the flood among them.
        deployment.server.kill(signal.SIGTERM)
        deployment.server.templates.write_text(TEST_TEMPLATES + FLOOD)
        deployment.server.start()
        yield deployment


def throughput(deployment: Deployment, mib: int) -> None:
    runner = deployment.runner_process("flooder").start()
    job = deployment.submit("bench.flood", {"mib": mib})
    received = lost = 0
    first = last = 0.0
    with deployment.admin() as client:
        for event in client.follow_job_logs(deployment.project, job):
            if not isinstance(event, JobLogPiece):
                continue
            last = time.monotonic()
            first = first or last
            content = event.content
            received += len(content.encode())
            lost += sum(int(n) for n in GAP.findall(content))
    view = deployment.wait_status(job, "processed", "failed", timeout=120)
    runner.kill()
    ran = (
        dt.datetime.fromisoformat(str(view.completed))
        - dt.datetime.fromisoformat(str(view.started))
    ).total_seconds()
    print(
        f"throughput: {received / 1e6:.1f} MB to the follower in {last - first:.2f} s "
        f"(first byte to last): {received / 1e6 / (last - first):.1f} MB/s; the job wrote "
        f"{mib * 1.048576:.1f} MB in {ran:.2f} s; {lost / 1e6:.1f} MB dropped by the runner "
        "(the job outran the stream)"
    )


def pickup(deployment: Deployment, samples: int, burst: int, label: str) -> None:
    channel = deployment.channel(f"idle-{label}")
    received: dict[str, float] = {}
    arrived = threading.Event()
    done = threading.Semaphore(0)

    def serve_jobs() -> None:
        with contextlib.suppress(ConnectionClosed):
            while True:
                message = channel.ask({"event": "ready", "poll_timeout": 900}, timeout=900)
                received[message["uuid"]] = time.perf_counter()
                arrived.set()
                channel.ask({"event": "running"})
                channel.ask({"event": "completed", "job": message["uuid"], "results": []})
                done.release()

    threading.Thread(target=serve_jobs, daemon=True).start()
    http = HTTPConnection("127.0.0.1", deployment.server.port)
    headers = {
        "Authorization": f"Bearer {deployment.server.token}",
        "Content-Type": "application/json",
    }
    payload = json.dumps({"project": "bench", "spec": "small", "template": "bench.noop"})

    def submit() -> str:
        http.request("POST", "/v0/run", payload, headers)
        return str(json.loads(http.getresponse().read())["job"])

    latencies: list[float] = []
    with deployment.admin() as client:
        for index in range(20 + samples):
            arrived.clear()
            wait_until(lambda: client.health().waiting_runners >= 1, interval=0.001)
            before = time.perf_counter()
            job = submit()
            if not arrived.wait(10):
                raise SystemExit(f"job {job} was not delivered within 10 s")
            if index >= 20:
                latencies.append((received[job] - before) * 1000)
            done.acquire(timeout=10)
    started = time.perf_counter()
    for _ in range(burst):
        submit()
    for _ in range(burst):
        if not done.acquire(timeout=60):
            raise SystemExit("the burst was not completed within 60 s")
    elapsed = time.perf_counter() - started
    channel.close()
    print(
        f"pickup {label}: p50 {percentile(latencies, 0.5):.2f} ms  "
        f"p90 {percentile(latencies, 0.9):.2f} ms  p99 {percentile(latencies, 0.99):.2f} ms  "
        f"mean {statistics.mean(latencies):.2f} ms; burst of {burst}: {burst / elapsed:.0f} jobs/s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mib", type=int, default=32)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--burst", type=int, default=200)
    parser.add_argument("--engine", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument(
        "--log-max-mib",
        type=int,
        default=1024,
        help="the server's live-log limit per stream (its default is 8): room for the flood",
    )
    options = parser.parse_args()
    with (
        tempfile.TemporaryDirectory() as tmp,
        deployment_for(options.engine, Path(tmp), options.log_max_mib) as dep,
    ):
        throughput(dep, options.mib)
        pickup(dep, options.samples, options.burst, "alone")
        for sink, label in (
            ("-", "beside a chatty job"),
            ("/dev/null", "beside a job as busy, silent"),
        ):
            busy = dep.runner_process(f"busy-{len(sink)}").start()
            job = dep.submit("bench.flood", {"mib": 0, "sink": sink})
            dep.wait_status(job, "running", timeout=30)
            pickup(dep, options.samples, options.burst, label)
            with dep.admin() as client:
                client.cancel_job(dep.project, job)
            dep.wait_status(job, "canceled", timeout=60)
            busy.kill()


if __name__ == "__main__":
    main()
