"""Report JSON in Bencher's shape, written for these tests: one with a threshold, a boundary per
metric and an alert, and one from a server that keeps no thresholds."""

from __future__ import annotations

from typing import Any

LATENCY = {"uuid": "m-lat", "name": "Latency", "slug": "latency", "units": "nanoseconds (ns)"}
THROUGHPUT = {
    "uuid": "m-thr",
    "name": "Throughput",
    "slug": "throughput",
    "units": "operations / second (ops/s)",
}


def measure(
    kind: dict[str, Any],
    metric: str,
    value: float,
    boundary: dict[str, float | None] | None = None,
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "measure": kind,
        "metric": {"uuid": metric, "value": value, "lower_value": None, "upper_value": None},
    }
    if boundary is not None:
        entry["threshold"] = {
            "uuid": f"t-{kind['slug']}",
            "model": {
                "test": "percentage",
                "min_sample_size": None,
                "max_sample_size": None,
                "window": None,
                "lower_boundary": None,
                "upper_boundary": 0.1,
            },
        }
        entry["boundary"] = boundary
    return entry


def bench(name: str, *measures: dict[str, Any]) -> dict[str, Any]:
    return {
        "benchmark": {"uuid": f"b-{name}", "name": name, "slug": name},
        "measures": list(measures),
    }


def alert(metric: str, benchmark: str, value: float, boundary: dict[str, Any]) -> dict[str, Any]:
    return {
        "uuid": f"a-{metric}",
        "report": "r-1",
        "iteration": 0,
        "threshold": {"uuid": "t-latency"},
        "benchmark": {"uuid": f"b-{benchmark}", "name": benchmark, "slug": benchmark},
        "metric": {"uuid": metric, "value": value, "lower_value": None, "upper_value": None},
        "boundary": boundary,
        "limit": "upper",
        "status": "active",
        "created": "2026-11-25T01:00:00Z",
        "modified": "2026-11-25T01:00:00Z",
    }


SLOW = {"baseline": 1000.0, "lower_limit": None, "upper_limit": 1100.0}


def with_thresholds() -> dict[str, Any]:
    return {
        "uuid": "r-1",
        "project": {"uuid": "p-1", "name": "Demo", "slug": "demo"},
        "branch": {"uuid": "br-1", "name": "feature/x", "slug": "feature-x"},
        "testbed": {"uuid": "tb-1", "name": "ci-runner", "slug": "ci-runner"},
        "adapter": "json",
        "start_time": "2026-11-25T01:00:00Z",
        "end_time": "2026-11-25T01:00:01Z",
        "error": None,
        "results": [
            [
                bench("sort|fast", measure(LATENCY, "met-1", 1250.5, SLOW)),
                bench(
                    "parse",
                    measure(
                        LATENCY,
                        "met-2",
                        980,
                        {"baseline": 1000.0, "lower_limit": None, "upper_limit": 1100.0},
                    ),
                    measure(THROUGHPUT, "met-3", 2_500_000),
                ),
            ]
        ],
        "alerts": [alert("met-1", "sort|fast", 1250.5, SLOW)],
        "created": "2026-11-25T01:00:01Z",
    }


def without_thresholds() -> dict[str, Any]:
    return {
        "uuid": "r-2",
        "project": "p-2",
        "branch": {"uuid": "br-2", "name": "main"},
        "testbed": {"uuid": "tb-2", "name": "localhost"},
        "adapter": "json",
        "error": None,
        "results": [
            [{"benchmark": {"name": "a"}, "measures": [measure({"name": "latency"}, "m1", 5)]}],
            [{"benchmark": {"name": "a"}, "measures": [measure({"name": "latency"}, "m2", 7)]}],
        ],
        "alerts": [],
    }
