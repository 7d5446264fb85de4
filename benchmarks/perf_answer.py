"""The CPU of ``GET /v0/projects/{project}/perf``'s answer for a 1,000-point series: building
it from the query's rows and serializing it as FastAPI does for the route (its response field,
the route's ``exclude_unset``), in this process, without the database's part.

Prints the median process CPU time per answer and the answer's size and hash (the same hash in
two trees: the same bytes on the wire). With the ``Perf`` model, ``validated`` is the answer
validated as ``Perf`` and sent as FastAPI sends a returned model, the cost the route avoids by
sending its view as built. With ``--before OLD_SRC`` (another tree's ``src``), the two trees are
measured alternately in subprocesses, each first in every other round.

    .venv/bin/python -m benchmarks.perf_answer [--points 1000] [--repeats 31]
        [--before OLD_SRC [--rounds 3]]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from fastapi.routing import APIRoute, serialize_response
from pydantic import TypeAdapter
from starlette.responses import Response

from benchrunner.server.routes import perf

try:  # absent from a tree before the perf answer's model
    from benchrunner.api.perf import Perf
    from benchrunner.server.http.answers import sent_as_built
except ImportError:
    Perf = None  # type: ignore[assignment,misc]
    sent_as_built = None  # type: ignore[assignment]

ROOT = Path(__file__).resolve().parent.parent
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
ALERT_EVERY = 97


def _point(i: int) -> SimpleNamespace:
    """A row as ``store.perf.perf_points`` reads it: judged by a percentage threshold, an
    alert every ``ALERT_EVERY`` points."""
    return SimpleNamespace(
        report_uuid=uuid.UUID(int=2 * i + 1),
        iteration=0,
        metric_uuid=uuid.UUID(int=2 * i + 2),
        metric_id=i,
        value=100.0 + i % 13,
        lower_value=None,
        upper_value=None,
        start_time=T0 + dt.timedelta(hours=8 * i),
        end_time=T0 + dt.timedelta(hours=8 * i, seconds=5),
        version=i + 1,
        hash=f"{i:040x}",
        threshold_uuid=uuid.UUID(int=10**9),
        model_uuid=uuid.UUID(int=10**9 + 1),
        test="percentage",
        min_sample_size=2,
        max_sample_size=64,
        window_seconds=None,
        lower_boundary=None,
        upper_boundary=0.1,
        model_created=T0,
        model_replaced=None,
        max_pvalue=None,
        min_magnitude=None,
        baseline=104.5,
        lower_limit=None,
        upper_limit=114.95,
        boundary_verdict=None,
        alert_uuid=uuid.UUID(int=10**10 + i) if i % ALERT_EVERY == 0 else None,
        alert_limit="upper",
        alert_status="active",
        alert_modified=T0,
        noisy=0,
        branch_id=1,
        testbed_id=1,
        benchmark_id=1,
        measure_id=1,
    )


def _named(n: int, name: str) -> SimpleNamespace:
    return SimpleNamespace(uuid=uuid.UUID(int=10**11 + n), name=name, slug=name, units="ns")


def resolved(points: int) -> Any:
    project = SimpleNamespace(
        uuid=uuid.UUID(int=10**12), name="bench", slug="bench", visibility="public"
    )
    project.created = project.modified = T0
    return perf._Resolved(
        project=project,
        org_uuid=uuid.UUID(int=10**12 + 1),
        branches={1: _named(1, "main")},
        testbeds={1: _named(2, "ci")},
        benchmarks={1: _named(3, "sort")},
        measures={1: _named(4, "latency")},
        start_time=T0,
        end_time=T0 + dt.timedelta(days=400),
        points=[_point(i) for i in range(points)],
    )


def _route() -> APIRoute:
    for route in perf.router.routes:
        if isinstance(route, APIRoute) and route.path == "/v0/projects/{project}/perf":
            return route
    raise LookupError("no perf route")


def measure(points: int, repeats: int) -> dict[str, Any]:
    """Median CPU milliseconds per answer of each way this tree can answer."""
    found = resolved(points)
    route = _route()

    def send(content: Any) -> bytes:
        if isinstance(content, Response):  # sent as built: FastAPI sends it as it is
            return bytes(content.body)
        return bytes(
            asyncio.run(
                serialize_response(
                    field=route.response_field,
                    response_content=content,
                    exclude_unset=route.response_model_exclude_unset,
                    dump_json=True,
                )
            )
        )

    async def endpoint() -> Any:
        """The route's endpoint with the query's result given."""
        view = perf.perf_view(found)
        return sent_as_built(view) if sent_as_built is not None else view

    ways: dict[str, Callable[[], bytes]] = {"answer": lambda: send(asyncio.run(endpoint()))}
    if Perf is not None:
        validated = TypeAdapter(Perf)
        ways["validated"] = lambda: validated.dump_json(
            Perf.model_validate(perf.perf_view(found)), exclude_unset=True
        )
    figures: dict[str, Any] = {}
    for name, way in ways.items():
        way()
        times = []
        for _ in range(repeats):
            started = time.process_time()
            way()
            times.append(time.process_time() - started)
        figures[name] = statistics.median(times) * 1000
    body = ways["answer"]()
    figures["bytes"] = len(body)
    figures["sha256"] = hashlib.sha256(body).hexdigest()[:16]
    return figures


def _in_tree(src: str, points: int, repeats: int) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{ROOT}"}
    command = [sys.executable, "-m", "benchmarks.perf_answer", "--points", str(points)]
    command += ["--repeats", str(repeats), "--json"]
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, check=True)
    figures: dict[str, Any] = json.loads(done.stdout)
    return figures


def compare(before: str, points: int, repeats: int, rounds: int) -> None:
    trees = [("before", before), ("after", str(ROOT / "src"))]
    runs: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
    for index in range(rounds):
        order = trees if index % 2 == 0 else trees[::-1]
        for label, src in order:
            runs[label].append(_in_tree(src, points, repeats))
    for label, found in runs.items():
        ways = [k for k in found[0] if k not in ("bytes", "sha256")]
        cells = ", ".join(
            f"{way} {statistics.median(r[way] for r in found):.2f} ms" for way in ways
        )
        print(f"{label}: {cells}; {found[0]['bytes']} bytes, sha256 {found[0]['sha256']}")
    old = statistics.median(r["answer"] for r in runs["before"])
    new = statistics.median(r["answer"] for r in runs["after"])
    print(f"after/before (answer): {new / old:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--points", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=31)
    parser.add_argument("--before", help="another tree's src, measured alternately")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.before:
        compare(options.before, options.points, options.repeats, options.rounds)
        return
    figures = measure(options.points, options.repeats)
    if options.json:
        print(json.dumps(figures))
    else:
        print(figures)


if __name__ == "__main__":
    main()
