"""Report JSON in Bencher's shape, written for these tests: one with a threshold, a boundary per
metric and an alert, and one from a project that keeps no thresholds; ``report`` parses one as
the client does."""

from __future__ import annotations

from typing import Any

from benchrunner.api.reports import Report

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
                "uuid": f"tm-{kind['slug']}",
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


def dimension(name: str, **more: Any) -> dict[str, Any]:
    """A branch, testbed, benchmark or measure as an alert or a report names it."""
    return {"uuid": f"d-{name}", "name": name, "slug": name, "project": "p-1", **more}


def project(name: str) -> dict[str, Any]:
    return {
        "uuid": f"p-{name}",
        "organization": "o-1",
        "name": name,
        "slug": name.lower(),
        "visibility": "public",
    }


def alert_of(benchmark: str, measure: str, units: str, **fields: Any) -> dict[str, Any]:
    """An alert's JSON: ``fields`` beside the dimensions it is on."""
    return {
        "uuid": "a-1",
        "report": "r-1",
        "branch": dimension("main"),
        "testbed": dimension("localhost"),
        "benchmark": dimension(benchmark),
        "measure": dimension(measure, units=units),
        "status": "active",
        **fields,
    }


def report(json: dict[str, Any]) -> Report:
    """The report JSON as the client parses it."""
    return Report.model_validate(json)


def alert(metric: str, benchmark: str, value: float, boundary: dict[str, Any]) -> dict[str, Any]:
    return {
        "uuid": f"a-{metric}",
        "report": "r-1",
        "iteration": 0,
        "threshold": {
            "uuid": "t-latency",
            "project": "p-1",
            "branch": dimension("feature/x"),
            "testbed": dimension("ci-runner"),
            "measure": dimension("Latency", units=LATENCY["units"]),
            "model": {"uuid": "tm-latency", "test": "percentage", "upper_boundary": 0.1},
        },
        "branch": dimension("feature/x"),
        "testbed": dimension("ci-runner"),
        "benchmark": dimension(benchmark),
        "measure": dimension("Latency", units=LATENCY["units"]),
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
        "project": project("Demo"),
        "branch": dimension("feature/x", slug="feature-x"),
        "testbed": dimension("ci-runner"),
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
        "project": project("p-2"),
        "branch": dimension("main"),
        "testbed": dimension("localhost"),
        "adapter": "json",
        "error": None,
        "results": [
            [
                {
                    "benchmark": dimension("a"),
                    "measures": [measure(dimension("latency", units=""), "m1", 5)],
                }
            ],
            [
                {
                    "benchmark": dimension("a"),
                    "measures": [measure(dimension("latency", units=""), "m2", 7)],
                }
            ],
        ],
        "alerts": [],
    }
