"""cpp_google on real Google Benchmark output (Debian's libbenchmark-dev, compiled once with g++):
JSON on stdout and the --benchmark_out file, with and without repetitions."""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from benchrunner.adapters import AdapterError, Settings, parse
from benchrunner.adapters.values import NANOSECONDS_PER

HEADER = Path("/usr/include/benchmark/benchmark.h")
SOURCE = r"""
#include <benchmark/benchmark.h>

static int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

static void BM_fib(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(fib(static_cast<int>(state.range(0))));
}
BENCHMARK(BM_fib)->Arg(5)->Arg(15);

static void BM_fib_us(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(fib(10));
}
BENCHMARK(BM_fib_us)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
"""
QUICK = "--benchmark_min_time=0.005"


@dataclass(frozen=True)
class Run:
    stdout: str
    exported: str  # what --benchmark_out wrote


@pytest.fixture(scope="session")
def benchmark_binary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("g++") is None or not HEADER.exists():
        pytest.skip("g++ and Debian's libbenchmark-dev are needed (tools/system-packages.sh)")
    folder = tmp_path_factory.mktemp("google_benchmark")
    (folder / "bench.cpp").write_text(SOURCE, encoding="utf-8")
    binary = folder / "bench"
    subprocess.run(
        ["g++", "-O1", "-o", str(binary), str(folder / "bench.cpp"), "-lbenchmark", "-lpthread"],
        check=True,
        timeout=120,
    )
    return binary


def run(binary: Path, *flags: str) -> Run:
    exported = binary.parent / "out.json"
    done = subprocess.run(
        [str(binary), QUICK, f"--benchmark_out={exported}", *flags],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return Run(done.stdout, exported.read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def single(benchmark_binary: Path) -> Run:
    return run(benchmark_binary, "--benchmark_format=json")


@pytest.fixture(scope="session")
def repeated(benchmark_binary: Path) -> Run:
    return run(benchmark_binary, "--benchmark_repetitions=3")  # console text on stdout


def reported(document: str) -> list[dict[str, object]]:
    entries = json.loads(document)["benchmarks"]
    assert isinstance(entries, list)
    return entries


def nanoseconds(entry: dict[str, object]) -> float:
    real_time = entry["real_time"]
    assert isinstance(real_time, float | int)
    return real_time * NANOSECONDS_PER[str(entry["time_unit"])]


def test_stdout_and_export_read_as_the_harness_reported(single: Run) -> None:
    entries = reported(single.stdout)
    found = parse("cpp_google", single.stdout)
    assert [m.benchmark for m in found] == ["BM_fib/5", "BM_fib/15", "BM_fib_us"]
    assert [m.benchmark for m in found] == [e["name"] for e in entries]
    assert {e["time_unit"] for e in entries} == {"ns", "us"}
    for measurement, entry in zip(found, entries, strict=True):
        assert measurement.measure == "latency"
        assert measurement.value == pytest.approx(nanoseconds(entry))
        assert (measurement.lower_value, measurement.upper_value) == (None, None)
        assert 0 < measurement.value < 1e9
    fib5, fib15, _ = (m.value for m in found)
    assert fib15 > fib5  # fib(15) does about 160 times fib(5)'s calls
    assert parse("cpp_google", single.exported) == found  # the same run, written to the file
    assert parse("cpp", single.stdout) == found
    assert parse("magic", single.stdout) == found
    assert parse("cpp_google", single.stdout, Settings(average="mean")) == found


def test_repetitions_and_aggregates(repeated: Run) -> None:
    entries = reported(repeated.exported)
    found = {m.benchmark: m.value for m in parse("cpp_google", repeated.exported)}
    runs = [e for e in entries if e["name"] == "BM_fib/15"]
    assert len(runs) == 3
    # The name is kept once, with its last repetition, as Bencher's results map keeps it.
    assert found["BM_fib/15"] == pytest.approx(nanoseconds(runs[-1]))
    assert found["BM_fib/15_mean"] == pytest.approx(
        statistics.mean(nanoseconds(e) for e in runs), rel=1e-9
    )
    assert found["BM_fib/15_median"] == pytest.approx(
        statistics.median(nanoseconds(e) for e in runs), rel=1e-9
    )
    assert found["BM_fib/15_stddev"] == pytest.approx(
        statistics.stdev(nanoseconds(e) for e in runs), rel=1e-6, abs=1e-6
    )
    assert "BM_fib/15_cv" in {e["name"] for e in entries}  # a fraction, not a time: left out
    assert "BM_fib/15_cv" not in found
    assert parse("magic", repeated.exported) == parse("cpp_google", repeated.exported)
    with pytest.raises(AdapterError, match="median"):
        parse("cpp_google", repeated.exported, Settings(average="median"))


def test_console_output_is_not_json(repeated: Run) -> None:
    assert "BM_fib/15_mean" in repeated.stdout
    with pytest.raises(AdapterError, match="cpp_google: not Google Benchmark JSON"):
        parse("cpp_google", repeated.stdout)
