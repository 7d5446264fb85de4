"""pytest-benchmark for real: a tiny benchmark file run in a subprocess, its JSON export read by
``python_pytest``. The project's own pytest config disables the plugin (``-p no:benchmark``), so
the run gets a config file of its own and loads the plugin explicitly."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

import pytest

from benchrunner.adapters import Settings, parse
from tests.unit.approx_measurements import spreads

BENCHMARKS = """
import pytest


def test_sum(benchmark):
    benchmark(sum, range(200))


@pytest.mark.parametrize("size", [10, 1000])
def test_sorted(benchmark, size):
    data = list(range(size, 0, -1))
    benchmark(sorted, data)
"""


@pytest.fixture(scope="module")
def export(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The text of ``--benchmark-json`` after one small run."""
    directory = tmp_path_factory.mktemp("pytest_benchmark")
    (directory / "test_tiny.py").write_text(BENCHMARKS, encoding="utf-8")
    (directory / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    result = subprocess.run(
        [
            sys.executable, "-m", "pytest", "-q", "-c", "pytest.ini",
            "-p", "pytest_benchmark.plugin", "-p", "no:cacheprovider",
            "--benchmark-json=export.json", "--benchmark-min-rounds=5",
            "--benchmark-max-time=0.02", "--benchmark-warmup=off", "test_tiny.py",
        ],
        cwd=directory,
        env={  # not as a parallel worker: pytest-benchmark turns itself off in one
            **{k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")},
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        },
        capture_output=True,
        text=True,
        timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    return (directory / "export.json").read_text(encoding="utf-8")


def test_every_test_is_a_latency_as_the_harness_measured_it(export: str) -> None:
    reported = {entry["fullname"]: entry["stats"] for entry in json.loads(export)["benchmarks"]}
    assert set(reported) == {
        "test_tiny.py::test_sum",
        "test_tiny.py::test_sorted[10]",
        "test_tiny.py::test_sorted[1000]",
    }
    by_mean = parse("python_pytest", export)
    by_median = parse("python_pytest", export, Settings(average="median"))
    assert [m.benchmark for m in by_mean] == list(reported)
    assert [m.benchmark for m in by_median] == list(reported)
    for mean, median in zip(by_mean, by_median, strict=True):
        stats = reported[mean.benchmark]
        rounds = stats["data"]  # each round's time in seconds, as the harness kept them
        assert len(rounds) == stats["rounds"] >= 5
        assert mean.measure == median.measure == "latency"
        assert 10 < mean.value < 1e8  # tens of ns to a few ms per call, in ns
        assert mean.value == pytest.approx(statistics.mean(rounds) * 1e9, rel=1e-9)
        stdev = statistics.stdev(rounds) * 1e9
        assert spreads(mean) == pytest.approx((stdev, stdev), rel=1e-6)
        assert median.value == pytest.approx(statistics.median(rounds) * 1e9, rel=1e-9)
        iqr = stats["iqr"] * 1e9  # the whole IQR either side, as Bencher takes it
        assert spreads(median) == pytest.approx((iqr, iqr), rel=1e-6, abs=1e-6)
    medians = {m.benchmark: m.value for m in by_median}
    # sorting 1000 items takes longer than sorting 10: the numbers are the right way round
    assert medians["test_tiny.py::test_sorted[1000]"] > medians["test_tiny.py::test_sorted[10]"]


def test_language_and_magic_read_it_as_the_adapter(export: str) -> None:
    for average in (None, "mean", "median"):
        named = parse("python_pytest", export, Settings(average=average))
        assert parse("python", export, Settings(average=average)) == named
        assert parse("magic", export, Settings(average=average)) == named
