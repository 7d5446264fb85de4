"""Pure pieces of turning a run into judged metrics: measure names, folding, ignore suffixes,
branch/hash/testbed from the context, model and hash validation, change-point bookkeeping."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from benchrunner.adapters import kept
from benchrunner.adapters.base import Measurement
from benchrunner.api.run import RunBody
from benchrunner.api.thresholds import ThresholdModelBody
from benchrunner.core.measures import measure_spec
from benchrunner.core.versions import is_git_hash
from benchrunner.detection.change_point import ChangePoint
from benchrunner.server.http.errors import ApiError
from benchrunner.server.http.model_bodies import checked_model
from benchrunner.server.processing.evaluation import already_alerted, history_since
from benchrunner.server.processing.results import report_metrics
from benchrunner.server.store.reports import without_ignore_suffix
from benchrunner.server.submission.body import run_target, threshold_models


@pytest.mark.parametrize(
    ("key", "name", "slug", "units"),
    [
        ("latency", "Latency", "latency", "nanoseconds (ns)"),
        ("Latency", "Latency", "latency", "nanoseconds (ns)"),
        ("throughput", "Throughput", "throughput", "operations / second (ops/s)"),
        ("file-size", "File Size", "file-size", "bytes (B)"),
        ("Build Time", "Build Time", "build-time", "seconds (s)"),
        ("instructions", "Instructions", "instructions", "instructions"),
        ("estimated-cycles", "Estimated Cycles", "estimated-cycles", "cycles"),
        ("l1-hits", "L1 Hits", "l1-hits", "hits"),
        ("Peak RSS", "Peak RSS", "peak-rss", "units"),
    ],
)
def test_measures_get_bencher_names_and_units(key: str, name: str, slug: str, units: str) -> None:
    spec = measure_spec(key)
    assert (spec.name, spec.slug, spec.units) == (name, slug, units)


def m(benchmark: str, value: float) -> Measurement:
    return Measurement(benchmark, "latency", value)


@pytest.mark.parametrize(
    ("fold", "expected"),
    [
        (None, [(0, "a", 3.0), (1, "a", 1.0), (2, "a", 2.0)]),
        ("min", [(0, "a", 1.0)]),
        ("max", [(0, "a", 3.0)]),
        ("median", [(0, "a", 2.0)]),
        ("mean", [(0, "a", 2.0)]),
    ],
)
def test_fold(fold: Any, expected: list[tuple[int, str, float]]) -> None:
    # As processing and direct runs read them: through adapters.kept, iteration by iteration.
    iterations = [kept([m("a", v), m("a", v)]) for v in (3.0, 1.0, 2.0)]
    found = report_metrics(iterations, fold)
    assert [(v.iteration, v.benchmark, v.value) for v in found] == expected


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        # Bencher v0.6.12's own examples (lib/bencher_valid), pinned to that release.
        ("snake_bencher_ignore", ("snake", True)),
        ("camelBencherIgnore", ("camel", True)),
        ("PascalBencherIgnore", ("Pascal", True)),
        ("kebab-bencher-ignore", ("kebab", True)),
        ("snake", ("snake", False)),
        ("kebab-bencher-ignored", ("kebab-bencher-ignored", False)),
        # One suffix only, the snake one checked first.
        ("a-bencher-ignore_bencher_ignore", ("a-bencher-ignore", True)),
        ("aBencherIgnore-bencher-ignore", ("aBencherIgnore", True)),
        # Nothing would be left: the name stays whole and is judged as any other.
        ("_bencher_ignore", ("_bencher_ignore", False)),
    ],
)
def test_ignore_suffix(name: str, expected: tuple[str, bool]) -> None:
    assert without_ignore_suffix(name) == expected


SHA = "a" * 40
CONTEXT = {
    "bencher.dev/v0/branch/ref/name": "feature/x",
    "bencher.dev/v0/branch/hash": "B" * 40,
    "bencher.dev/v0/testbed/os": "linux",
}


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({}, ("main", None, "localhost")),
        ({"context": CONTEXT}, ("feature/x", "b" * 40, "linux")),
        (
            {"context": CONTEXT, "branch": "dev", "hash": SHA, "testbed": "ci"},
            ("dev", SHA, "ci"),
        ),
        ({"context": {"bencher.dev/v0/branch/hash": "not-a-hash"}}, ("main", None, "localhost")),
        ({"context": {"bencher.dev/v0/branch/ref/name": ""}}, ("main", None, "localhost")),
    ],
)
def test_body_then_context_then_defaults(
    body: dict[str, Any], expected: tuple[str, str | None, str]
) -> None:
    target = run_target(RunBody.model_validate({"results": ["{}"], **body}))
    assert (target.branch, target.hash, target.testbed) == expected


@pytest.mark.parametrize(
    ("value", "valid"),
    [("a" * 40, True), ("A" * 64, True), ("a" * 39, False), ("g" * 40, False), ("", False)],
)
def test_git_hashes(value: str, valid: bool) -> None:
    assert is_git_hash(value) is valid


@pytest.mark.parametrize(
    ("model", "named"),
    [
        ({"test": "percentage", "upper_boundary": -0.1}, "upper_boundary"),
        ({"test": "z_score", "lower_boundary": 2.0}, "lower_boundary"),
        ({"test": "t_test", "upper_boundary": 0.99, "min_sample_size": 1}, "min_sample_size"),
        ({"test": "iqr", "upper_boundary": 1, "window": 2**33}, "window"),
        ({"test": "percentage", "upper_boundary": float("inf")}, "upper_boundary"),
        ({"test": "bogus", "upper_boundary": 1}, "bogus"),
    ],
)
def test_bad_models_are_400_naming_the_parameter(model: dict[str, Any], named: str) -> None:
    with pytest.raises(ApiError) as refused:
        checked_model(ThresholdModelBody.model_validate(model), "thresholds.models.latency")
    assert refused.value.status == 400
    assert "thresholds.models.latency" in refused.value.message and named in refused.value.message


def test_a_good_model_passes() -> None:
    body = ThresholdModelBody(test="t", upper_boundary=0.99, max_sample_size=64)
    assert checked_model(body, "x").test.value == "t_test"


@pytest.mark.parametrize("key", ["", "x" * 65])
def test_a_threshold_keyed_by_no_storable_measure_name_is_a_400(key: str) -> None:
    body = RunBody(thresholds={"models": {key: {"test": "percentage", "upper_boundary": 0.1}}})
    with pytest.raises(ApiError) as refused:
        threshold_models(body)
    assert refused.value.status == 400
    assert "thresholds.models" in refused.value.message and "1-64" in refused.value.message


def test_a_threshold_keyed_by_a_long_enough_name_passes() -> None:
    model = {"test": "percentage", "upper_boundary": 0.1}
    body = RunBody(thresholds={"models": {"x" * 64: model, "Latency": model}})
    assert sorted(threshold_models(body)) == ["Latency", "x" * 64]


def step(index: int) -> ChangePoint:
    return ChangePoint(index, 1.0, 2.0, 1.0, 0.0)


@pytest.mark.parametrize(
    ("found", "k", "alerted", "seen"),
    [
        ([step(10)], 0, [], False),
        ([step(10)], 0, [11], True),  # the same step, found one value later
        ([step(10), step(20)], 1, [10], False),  # the earlier step's alert
        ([step(10), step(20)], 1, [16], True),
        ([step(10), step(20)], 0, [15], False),  # halfway belongs to neither
    ],
)
def test_a_step_already_alerted_is_not_alerted_again(
    found: list[ChangePoint], k: int, alerted: list[int], seen: bool
) -> None:
    assert already_alerted(found, k, alerted) is seen


START = dt.datetime(2026, 1, 2, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("window", "reset", "expected"),
    [
        (None, None, None),
        (3600, None, START - dt.timedelta(hours=1)),
        (None, START - dt.timedelta(days=3), START - dt.timedelta(days=3)),
        (3600, START - dt.timedelta(minutes=5), START - dt.timedelta(minutes=5)),
        (60, START - dt.timedelta(days=1), START - dt.timedelta(minutes=1)),
    ],
)
def test_history_starts_at_the_later_of_window_and_reset(
    window: int | None, reset: dt.datetime | None, expected: dt.datetime | None
) -> None:
    assert history_since(START, window, reset) == expected
