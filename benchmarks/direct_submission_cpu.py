"""What a direct submission (``POST /v0/run`` of results, no job) costs the server's process,
answer included: 10 benchmarks x one measure with its bounds, 2 iterations (20 metrics), judged
by a percentage threshold of at most 10 samples, so that every answer carries its thresholds
and boundaries.

One SQLite server; each block of ``--submissions`` goes to a branch of its own (the same
history for every block). With ``--before SRC`` (another checkout's ``src``) the server is
restarted on the same database alternately from that tree and this one (which goes first
alternates), ``--rounds`` times, and the ratio of the medians is printed.

    .venv/bin/python -m benchmarks.direct_submission_cpu [--submissions 150] [--rounds 5]
        [--before OLD_SRC]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import signal
import statistics
import tempfile
from pathlib import Path
from typing import Any

from tests.harness import Deployment, deploy

from benchmarks.cpu_time import process_cpu_seconds

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
THRESHOLD = {"test": "percentage", "upper_boundary": 0.5, "min_sample_size": 3}
WARM_UP = 5


def _body(branch: str, minute: int) -> dict[str, Any]:
    at = (T0 + dt.timedelta(minutes=minute)).isoformat()
    value = 100 + minute % 3
    bounded = {"value": value, "lower_value": value - 1, "upper_value": value + 1}
    return {
        "project": "bench",
        "branch": branch,
        "testbed": "ci",
        "start_time": at,
        "end_time": at,
        "settings": {"adapter": "json"},
        "results": [
            json.dumps({f"b{i}": {"latency": bounded} for i in range(10)}),
            json.dumps({f"b{i}": {"latency": {"value": value}} for i in range(10)}),
        ],
        "thresholds": {"models": {"latency": {**THRESHOLD, "max_sample_size": 10}}},
    }


def _block(deployment: Deployment, branch: str, submissions: int) -> float:
    """The server's CPU ms per submission over ``submissions`` on ``branch``."""
    server = deployment.server
    assert server.proc is not None
    headers = {"Authorization": f"Bearer {server.token}"}
    with deployment.http() as http:
        for minute in range(WARM_UP):
            http.post("/v0/run", json=_body(branch, minute), headers=headers).raise_for_status()
        before = process_cpu_seconds(server.proc.pid)
        for minute in range(WARM_UP, WARM_UP + submissions):
            http.post("/v0/run", json=_body(branch, minute), headers=headers).raise_for_status()
        return (process_cpu_seconds(server.proc.pid) - before) / submissions * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--submissions", type=int, default=150)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--before", help="another checkout's src, measured alternately")
    args = parser.parse_args()
    trees = {"after": {}} if args.before is None else {"before": {"PYTHONPATH": args.before}}
    if args.before is not None:
        trees["after"] = {}
    found: dict[str, list[float]] = {name: [] for name in trees}
    with (
        tempfile.TemporaryDirectory() as tmp,
        deploy(Path(tmp), f"sqlite:///{Path(tmp) / 'db.sqlite'}") as deployment,
    ):
        for round_ in range(args.rounds):
            order = list(trees.items())
            for name, env in order if round_ % 2 == 0 else reversed(order):
                deployment.server.kill(signal.SIGTERM)
                deployment.server.env = env
                deployment.server.start()
                found[name].append(_block(deployment, f"{name}-{round_}", args.submissions))
                print(f"{name}: {found[name][-1]:.2f} ms per submission", flush=True)
    medians = {name: statistics.median(runs) for name, runs in found.items()}
    for name, median in medians.items():
        print(f"{name}: median {median:.2f} ms per submission ({args.rounds} blocks)")
    if "before" in medians:
        print(f"after / before: {medians['after'] / medians['before']:.3f}x")


if __name__ == "__main__":
    main()
