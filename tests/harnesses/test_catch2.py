"""cpp_catch2 on real Catch2 output (Debian's catch2, 2.13, single header; compiled once)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from benchrunner.adapters import AdapterError, Settings, parse

HEADER = Path("/usr/include/catch2/catch.hpp")
LONG_NAME = "fib 5 under a name long enough that Catch2 has to wrap it over several rows"
SOURCE = rf"""
#define CATCH_CONFIG_MAIN
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

static int fib(int n) {{ return n < 2 ? n : fib(n - 1) + fib(n - 2); }}

TEST_CASE("fibonacci") {{
  BENCHMARK("fib 15") {{ return fib(15); }};
  BENCHMARK("{LONG_NAME}") {{ return fib(5); }};
}}
"""


@pytest.fixture(scope="session")
def catch2_output(tmp_path_factory: pytest.TempPathFactory) -> str:
    if shutil.which("g++") is None or not HEADER.exists():
        pytest.skip("g++ and Debian's catch2 are needed (tools/system-packages.sh)")
    folder = tmp_path_factory.mktemp("catch2")
    (folder / "bench.cpp").write_text(SOURCE, encoding="utf-8")
    binary = folder / "bench"
    # -O0: the single header's implementation dominates the compile time, not our code.
    subprocess.run(
        ["g++", "-O0", "-o", str(binary), str(folder / "bench.cpp")], check=True, timeout=300
    )
    done = subprocess.run(
        [str(binary), "--benchmark-samples", "10", "--benchmark-resamples", "100"],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done.stdout


def test_benchmarks_read_from_the_table(catch2_output: str) -> None:
    found = parse("cpp_catch2", catch2_output)
    assert [m.benchmark for m in found] == ["fibonacci: fib 15", f"fibonacci: {LONG_NAME}"]
    assert LONG_NAME not in catch2_output  # Catch2 did wrap it; the adapter joined the rows
    for measurement in found:
        assert measurement.measure == "latency"
        assert measurement.lower_value is not None and measurement.upper_value is not None
        assert 0 < measurement.value < 1e9
        # lower and upper are the mean minus and plus the same standard deviation
        assert measurement.lower_value <= measurement.value <= measurement.upper_value
        assert measurement.value - measurement.lower_value == pytest.approx(
            measurement.upper_value - measurement.value
        )
    fib15, fib5 = (m.value for m in found)
    assert fib15 > fib5  # fib(15) makes about 160 times fib(5)'s calls
    assert parse("cpp", catch2_output) == found
    assert parse("magic", catch2_output) == found
    assert parse("cpp_catch2", catch2_output, Settings(average="mean")) == found
    with pytest.raises(AdapterError, match="median"):
        parse("cpp_catch2", catch2_output, Settings(average="median"))
