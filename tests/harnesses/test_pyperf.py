"""pyperf for real: ``pyperf timeit`` and a ``pyperf.Runner`` script with two benchmarks, tiny
loops and values, their ``-o`` result files read by ``python_pyperf`` and checked against the
statistics pyperf itself computes from the same file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyperf  # type: ignore[import-untyped]
import pytest

from benchrunner.adapters import AdapterError, Settings, parse
from tests.unit.approx_measurements import spreads

RUNNER_SCRIPT = """
import pyperf

runner = pyperf.Runner()
runner.bench_func("sum_range", sum, range(300))
runner.timeit("sorted_list", "sorted(data)", setup="data = list(range(200, 0, -1))")
"""

SMALL = ["--loops", "50", "--values", "3", "--warmups", "1", "--processes", "2", "--quiet"]


def _run(arguments: list[str], directory: Path) -> None:
    result = subprocess.run(
        [sys.executable, *arguments], cwd=directory, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.fixture(scope="module")
def result_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``timeit``: one benchmark, named in the suite's metadata; ``runner``: two benchmarks;
    ``memory``: ``--track-memory``, a benchmark in bytes."""
    directory = tmp_path_factory.mktemp("pyperf")
    (directory / "bench.py").write_text(RUNNER_SCRIPT, encoding="utf-8")
    _run(["-m", "pyperf", "timeit", *SMALL, "-o", "timeit.json", "sum(range(100))"], directory)
    _run(["bench.py", *SMALL, "-o", "runner.json"], directory)
    memory = ["--track-memory", "--loops", "5", "--values", "1", "--processes", "1", "--quiet"]
    _run(["-m", "pyperf", "timeit", *memory, "-o", "memory.json", "[0] * 1000"], directory)
    return {name: directory / f"{name}.json" for name in ("timeit", "runner", "memory")}


@pytest.mark.parametrize(
    ("file", "names"), [("timeit", ["timeit"]), ("runner", ["sum_range", "sorted_list"])]
)
def test_every_benchmark_is_a_latency_as_pyperf_computes_it(
    result_files: dict[str, Path], file: str, names: list[str]
) -> None:
    text = result_files[file].read_text(encoding="utf-8")
    benchmarks = pyperf.BenchmarkSuite.load(str(result_files[file])).get_benchmarks()
    by_mean = parse("python_pyperf", text)
    by_median = parse("python_pyperf", text, Settings(average="median"))
    assert [b.get_name() for b in benchmarks] == names
    assert [m.benchmark for m in by_mean] == names
    assert [m.benchmark for m in by_median] == names
    for benchmark, mean, median in zip(benchmarks, by_mean, by_median, strict=True):
        assert benchmark.get_nvalue() == 6  # 2 processes x 3 values; warmups left out
        assert mean.measure == median.measure == "latency"
        assert 10 < mean.value < 1e8  # tens of ns to a few ms per loop, in ns
        assert mean.value == pytest.approx(benchmark.mean() * 1e9, rel=1e-9)
        stdev = benchmark.stdev() * 1e9
        assert spreads(mean) == pytest.approx((stdev, stdev), rel=1e-6)
        assert median.value == pytest.approx(benchmark.median() * 1e9, rel=1e-9)
        spread = benchmark.median_abs_dev() * 1e9
        assert spreads(median) == pytest.approx((spread, spread), rel=1e-6, abs=1e-6)


def test_memory_is_not_a_latency(result_files: dict[str, Path]) -> None:
    text = result_files["memory"].read_text(encoding="utf-8")
    [benchmark] = pyperf.BenchmarkSuite.load(str(result_files["memory"])).get_benchmarks()
    assert benchmark.get_unit() == "byte"
    with pytest.raises(
        AdapterError, match=r"python_pyperf: no benchmark is measured in seconds \(units: 'byte'\)"
    ):
        parse("python_pyperf", text)


@pytest.mark.parametrize("file", ["timeit", "runner"])
def test_language_and_magic_read_it_as_the_adapter(
    result_files: dict[str, Path], file: str
) -> None:
    text = result_files[file].read_text(encoding="utf-8")
    for average in (None, "mean", "median"):
        named = parse("python_pyperf", text, Settings(average=average))
        assert parse("python", text, Settings(average=average)) == named
        assert parse("magic", text, Settings(average=average)) == named
