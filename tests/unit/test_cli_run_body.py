"""``benchrunner run`` flags -> the exact ``POST /v0/run`` body, as Bencher's CLI sends it."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
import typer

from benchrunner.cli.run_body import RunFlags, StartPointFlags, build_body, start_point_body
from benchrunner.cli.thresholds import ThresholdFlags
from benchrunner.client import request_json

NOW = dt.datetime(2026, 11, 25, 1, 2, 3, tzinfo=dt.UTC)
SHA = "0123456789abcdef0123456789abcdef01234567"
RESULTS = '{"b": {"latency": {"value": 1}}}'


def body(**given: Any) -> dict[str, Any]:
    return request_json(build_body(RunFlags(**given), NOW))


def test_template_body_leaves_branch_and_testbed_to_the_server() -> None:
    assert body(project="demo", spec="local", template="bench.sleep", args={"ms": "20"}) == {
        "project": "demo",
        "settings": {"adapter": "magic"},
        "spec": "local",
        "template": "bench.sleep",
        "args": {"ms": "20"},
    }


def test_image_body_has_job_options() -> None:
    digest = "sha256:" + "a" * 64
    made = body(spec="local", image=digest, iterations=3, timeout=30, file_paths=["out.json"])
    assert made["image"] == digest
    assert made["job"] == {"iter": 3, "timeout": 30, "file_paths": ["out.json"]}
    assert "template" not in made and "args" not in made


def test_direct_body_with_everything_bencher_sends() -> None:
    made = body(
        project="demo",
        branch="feature",
        testbed="ci",
        hash=SHA,
        context={"bencher.dev/v0/testbed/os": "Linux"},
        adapter="json",
        average="median",
        fold="min",
        results=[RESULTS, RESULTS],
        iterations=2,
        start_point=StartPointFlags(branch="main", hash=SHA.upper(), clone_thresholds=True),
        thresholds=ThresholdFlags(
            measures=["latency", "throughput"],
            tests=["t_test", "percentage"],
            max_sample_sizes=["64", "_"],
            windows=["_", "86400"],
            lower_boundaries=["_", "0.25"],
            upper_boundaries=["0.99"],
            reset=True,
        ),
    )
    assert made == {
        "project": "demo",
        "branch": "feature",
        "testbed": "ci",
        "hash": SHA,
        "start_point": {
            "branch": "main",
            "hash": SHA,  # lowercased by the model, as the server would
            "max_versions": 255,
            "clone_thresholds": True,
            "reset": False,
        },
        "thresholds": {
            "models": {
                "latency": {"test": "t_test", "max_sample_size": 64, "upper_boundary": 0.99},
                "throughput": {"test": "percentage", "window": 86400, "lower_boundary": 0.25},
            },
            "reset": True,
        },
        "context": {"bencher.dev/v0/testbed/os": "Linux"},
        "settings": {"adapter": "json", "average": "median", "fold": "min"},
        "results": [RESULTS, RESULTS],
        "start_time": "2026-11-25T01:02:03Z",
        "end_time": "2026-11-25T01:02:03Z",
    }


@pytest.mark.parametrize(
    ("flags", "sent"),
    [
        (StartPointFlags(), None),
        (
            StartPointFlags(branch="main"),
            {"branch": "main", "max_versions": 255, "clone_thresholds": False, "reset": False},
        ),
        (
            StartPointFlags(branch="main", max_versions=10, reset=True),
            {"branch": "main", "max_versions": 10, "clone_thresholds": False, "reset": True},
        ),
        (
            StartPointFlags(reset=True),
            {"max_versions": 255, "clone_thresholds": False, "reset": True},
        ),
    ],
)
def test_start_point_is_sent_as_bencher_sends_it(
    flags: StartPointFlags, sent: dict[str, Any] | None
) -> None:
    found = start_point_body(flags)
    assert (None if found is None else request_json(found)) == sent


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({}, "nothing to run"),
        ({"template": "t"}, "--spec is required"),
        ({"spec": "s", "template": "t", "image": "sha256:x"}, "either --template or --image"),
        ({"spec": "s", "image": "sha256:x", "args": {"a": "1"}}, "--arg is only for --template"),
        ({"results": ["{}"], "spec": "s"}, "cannot be combined"),
        ({"results": ["{}"], "timeout": 5}, "cannot be combined"),
        ({"results": ["{}"], "iterations": 2}, "--iter 2 does not match the 1 --results"),
        ({"results": ["{}"] * 3, "iterations": 2}, "--iter 2 does not match the 3 --results"),
        ({"results": ["{}"], "adapter": "cobol"}, "--adapter 'cobol' is not one of: "),
        ({"results": ["{}"], "hash": "abc123"}, "--hash 'abc123' is not a full git commit hash"),
        (
            {"results": ["{}"], "start_point": StartPointFlags(hash=SHA)},
            "--start-point-hash needs --start-point BRANCH",
        ),
        (
            {"results": ["{}"], "start_point": StartPointFlags(clone_thresholds=True)},
            "--start-point-clone-thresholds needs --start-point",
        ),
        (
            {"results": ["{}"], "start_point": StartPointFlags(max_versions=3)},
            "--start-point-max-versions needs --start-point",
        ),
        (
            {"results": ["{}"], "start_point": StartPointFlags(branch="m", hash="HEAD")},
            "--start-point-hash 'HEAD' is not a full git commit hash",
        ),
        (
            {"results": ["{}"], "thresholds": ThresholdFlags(tests=["t_test"])},
            "--threshold-test is given 1 times for 0 --threshold-measure",
        ),
    ],
)
def test_invalid_flags_are_usage_errors_naming_them(given: dict[str, Any], message: str) -> None:
    with pytest.raises(typer.BadParameter) as raised:
        body(**given)
    assert message in str(raised.value)


@pytest.mark.parametrize("iterations", [None, 1, 3])
def test_iter_may_be_one_or_the_number_of_results(iterations: int | None) -> None:
    made = body(results=["{}"] * 3, iterations=iterations, fold="median")
    assert made["results"] == ["{}"] * 3
    assert made["settings"] == {"adapter": "magic", "fold": "median"}
    assert "job" not in made


def test_direct_times_are_utc() -> None:
    made = body(results=["{}"])
    local = request_json(
        build_body(RunFlags(results=["{}"]), NOW.astimezone(dt.timezone(dt.timedelta(hours=2))))
    )
    assert made["start_time"] == local["start_time"] == "2026-11-25T01:02:03Z"
