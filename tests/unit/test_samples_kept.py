"""Raw samples: what each harness gives beside Bencher's value (never changing it), what a fold
keeps, and the cap."""

from __future__ import annotations

import json

import pytest

from benchrunner import adapters
from benchrunner.adapters import Measurement
from benchrunner.core.samples import CAP, bounded
from benchrunner.server.processing.results import report_metrics
from tests.unit.adapter_samples import sample

SETTINGS = adapters.Settings()


def test_hyperfine_keeps_its_times_in_nanoseconds() -> None:
    gzip, zstd = adapters.parse("shell_hyperfine", sample("shell_hyperfine", "two_commands.json"))
    assert gzip.value == pytest.approx(0.25e9) and gzip.samples == pytest.approx(
        (0.23e9, 0.2475e9, 0.2425e9, 0.28e9)
    )
    assert zstd.samples == pytest.approx((0.0625e9,))


def test_hyperfine_times_written_oddly_lose_the_samples_not_the_result() -> None:
    document = json.loads(sample("shell_hyperfine", "two_commands.json"))
    document["results"][0]["times"] = [0.2, "fast", 0.3]
    [gzip, _] = adapters.parse("shell_hyperfine", json.dumps(document))
    assert gzip.samples == () and gzip.value == pytest.approx(0.25e9)


def test_pyperf_keeps_every_value_of_every_run_without_warmups() -> None:
    suite = {
        "version": "1.0",
        "metadata": {"name": "b", "unit": "second"},
        "benchmarks": [
            {"runs": [{"warmups": [[1, 9.0]], "values": [1.0, 2.0]}, {"values": [3.0]}]}
        ],
    }
    [found] = adapters.parse("python_pyperf", json.dumps(suite))
    assert found.samples == (1e9, 2e9, 3e9) and found.value == pytest.approx(2e9)


def test_google_benchmark_repetitions_are_the_samples_of_each_and_of_mean_and_median() -> None:
    found = adapters.parse("cpp_google", sample("cpp_google", "repetitions.json"))
    by_name = {m.benchmark: m for m in found}  # as a report keeps them: the last of a name
    assert by_name["BM_sort/1024"].samples == (10e3, 13e3, 16e3)
    assert by_name["BM_sort/1024"].value == 16e3  # the last repetition, as Bencher keeps it
    assert by_name["BM_sort/1024_mean"].samples == (10e3, 13e3, 16e3)
    assert by_name["BM_sort/1024_median"].samples == (10e3, 13e3, 16e3)
    single = adapters.parse("cpp_google", sample("cpp_google", "single.json"))
    assert all(m.samples == () for m in single)


def test_pytest_benchmark_data_when_saved() -> None:
    document = json.loads(sample("python_pytest", "two_tests.json"))
    assert all(m.samples == () for m in adapters.parse("python_pytest", json.dumps(document)))
    document["benchmarks"][0]["stats"]["data"] = [0.001, 0.002]
    first = adapters.parse("python_pytest", json.dumps(document))[0]
    assert first.samples == pytest.approx((1e6, 2e6))


def test_samples_never_change_a_measurement() -> None:
    assert Measurement("a", "latency", 1.0, samples=(1.0, 2.0)) == Measurement("a", "latency", 1.0)


def test_a_fold_keeps_every_iteration_and_every_harness_sample() -> None:
    iterations = [
        [Measurement("a", "latency", 2.0, samples=(1.0, 3.0)), Measurement("b", "latency", 5.0)],
        [Measurement("a", "latency", 4.0), Measurement("b", "latency", 7.0)],
    ]
    folded = report_metrics(iterations, "mean")
    assert [(m.benchmark, m.value, m.samples) for m in folded] == [
        ("a", 3.0, (1.0, 3.0, 4.0)),
        ("b", 6.0, (5.0, 7.0)),
    ]
    unfolded = report_metrics(iterations, None)
    assert [m.samples for m in unfolded] == [(1.0, 3.0), (), (), ()]


def test_the_cap_keeps_an_even_pick_and_summarizes_all() -> None:
    values = [float(v) for v in range(2 * CAP + 1)]
    kept = bounded(values)
    assert (kept.count, kept.minimum, kept.maximum, kept.cut) == (2 * CAP + 1, 0.0, 2.0 * CAP, True)
    assert len(kept.values) == CAP and kept.values[:3] == (0.0, 2.0, 4.0)
    small = bounded([3.0, 1.0])
    assert (small.values, small.cut) == ((3.0, 1.0), False)
    with pytest.raises(ValueError, match="at least one"):
        bounded([])
