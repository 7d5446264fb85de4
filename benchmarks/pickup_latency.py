"""Pickup latency: client clock before ``POST /v0/run`` -> ``job`` message at an idle runner.

One real server process, one idle channel connection waiting with ``ready``. Each sample
submits a template job, records when the channel receives it, completes it, and goes idle
again. Prints p50/p90/p99 in milliseconds. With ``--replicas 2`` (PostgreSQL) the runner waits
on replica B and jobs are submitted through replica A, so every pickup crosses LISTEN/NOTIFY.

    .venv/bin/python -m benchmarks.pickup_latency [--samples 500]
        [--engine sqlite|postgresql] [--replicas 1|2]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import tempfile
import threading
import time
from http.client import HTTPConnection
from pathlib import Path

from tests.databases import fresh_database
from tests.harness import RawChannel, deploy, wait_until
from websockets.exceptions import ConnectionClosed


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--samples", type=int, default=500)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--engine", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument("--replicas", type=int, choices=[1, 2], default=1)
    options = parser.parse_args()
    if options.replicas == 2 and options.engine != "postgresql":
        parser.error("two replicas need --engine postgresql")
    with (
        tempfile.TemporaryDirectory() as tmp,
        fresh_database(options.engine, Path(tmp)) as url,
        deploy(Path(tmp), url, heartbeat_timeout=60.0) as deployment,
    ):
        waiting_on = deployment.add_replica("replica-b") if options.replicas == 2 else None
        channel: RawChannel = deployment.channel("idle", server=waiting_on)
        body = {"project": "bench", "spec": "small", "template": "bench.noop"}
        received: dict[str, float] = {}
        arrived = threading.Event()
        ready_again = threading.Event()

        def idle_runner() -> None:
            with contextlib.suppress(ConnectionClosed):
                serve_jobs()

        def serve_jobs() -> None:
            while True:
                message = channel.ask({"event": "ready", "poll_timeout": 900}, timeout=900)
                received[message["uuid"]] = time.perf_counter()
                arrived.set()
                channel.ask({"event": "running"})
                channel.ask({"event": "completed", "job": message["uuid"], "results": []})
                ready_again.set()

        threading.Thread(target=idle_runner, daemon=True).start()
        samples: list[float] = []
        # A lean stdlib client, so the figure is the server's and not an HTTP library's.
        http = HTTPConnection("127.0.0.1", deployment.server.port)
        headers = {
            "Authorization": f"Bearer {deployment.server.token}",
            "Content-Type": "application/json",
        }
        payload = json.dumps(body)
        with (waiting_on or deployment.server).client() as client:
            for index in range(options.warmup + options.samples):
                arrived.clear()
                ready_again.clear()
                wait_until(lambda: client.health().waiting_runners == 1, interval=0.001)
                before = time.perf_counter()
                http.request("POST", "/v0/run", payload, headers)
                response = http.getresponse()
                job = json.loads(response.read())["job"]
                if not arrived.wait(10):
                    raise SystemExit(f"job {job} was not delivered within 10 s")
                if index >= options.warmup:
                    samples.append((received[job] - before) * 1000)
                ready_again.wait(10)
        print(
            f"{options.engine}, {options.replicas} replica(s): "
            f"pickup latency over {len(samples)} samples (ms): "
            f"p50 {percentile(samples, 0.5):.2f}  p90 {percentile(samples, 0.9):.2f}  "
            f"p99 {percentile(samples, 0.99):.2f}  mean {statistics.mean(samples):.2f}"
        )


if __name__ == "__main__":
    main()
