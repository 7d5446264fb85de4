"""go_bench on real ``go test -bench`` output (Debian's golang-go), plain and with -json: a tiny
package in a temporary module, offline, with its own build cache."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from benchrunner.adapters import AdapterError, Measurement, Settings, parse

GO_MOD = "module example.com/fib\n\ngo 1.19\n"
TEST_SOURCE = """package fib

import "testing"

func fib(n int) int {
	if n < 2 {
		return n
	}
	return fib(n-1) + fib(n-2)
}

func BenchmarkFib(b *testing.B) {
	for _, n := range []int{5, 15} {
		n := n
		b.Run(map[int]string{5: "n=5", 15: "n=15"}[n], func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				fib(n)
			}
		})
	}
}

func BenchmarkAlloc(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(64)
	for i := 0; i < b.N; i++ {
		_ = make([]byte, 64)
	}
	b.ReportMetric(3, "widgets/op")
}
"""
NAMES = {"BenchmarkFib/n=5", "BenchmarkFib/n=15", "BenchmarkAlloc"}


@pytest.fixture(scope="session")
def go_package(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    if shutil.which("go") is None:
        pytest.skip("go is needed (Debian's golang-go, tools/system-packages.sh)")
    root = tmp_path_factory.mktemp("go_bench")
    package = root / "fib"
    package.mkdir()
    (package / "go.mod").write_text(GO_MOD, encoding="utf-8")
    (package / "fib_test.go").write_text(TEST_SOURCE, encoding="utf-8")
    environment = {
        **os.environ,
        "GOFLAGS": "-mod=mod",
        "GOCACHE": str(root / "cache"),
        "GOPATH": str(root / "gopath"),
        "GOPROXY": "off",
        "GOTOOLCHAIN": "local",
        "GOTELEMETRY": "off",
    }
    return package, environment


def go_test(package: tuple[Path, dict[str, str]], *flags: str) -> str:
    folder, environment = package
    done = subprocess.run(
        ["go", "test", "-vet=off", "-run", "^$", "-bench", ".", "-benchtime=100x", *flags],
        cwd=folder,
        env=environment,
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done.stdout


@pytest.fixture(scope="session")
def plain(go_package: tuple[Path, dict[str, str]]) -> str:
    return go_test(go_package, "-benchmem", "-count=2")


@pytest.fixture(scope="session")
def stream(go_package: tuple[Path, dict[str, str]]) -> str:
    return go_test(go_package, "-json")


def without_procs(found: list[Measurement]) -> dict[str, float]:
    """Results by name without Go's -<GOMAXPROCS> suffix (absent when GOMAXPROCS is 1)."""
    return {re.sub(r"-[0-9]+$", "", m.benchmark): m.value for m in found}


def check_plausible(found: list[Measurement]) -> None:
    values = without_procs(found)
    assert set(values) == NAMES
    assert all(m.measure == "latency" and m.lower_value is None for m in found)
    assert all(0 < v < 1e9 for v in values.values())
    assert values["BenchmarkFib/n=15"] > values["BenchmarkFib/n=5"]


def test_plain_output(plain: str) -> None:
    found = parse("go_bench", plain)
    check_plausible(found)
    printed = [line.split()[0] for line in plain.splitlines() if line.startswith("Benchmark")]
    assert len(printed) == 6  # -count=2: each benchmark twice; a report keeps the last
    assert [m.benchmark for m in found] == list(reversed(dict.fromkeys(reversed(printed))))
    assert "B/op" in plain and "MB/s" in plain and "widgets/op" in plain
    assert parse("go", plain) == found
    assert parse("magic", plain) == found
    assert parse("go_bench", plain, Settings(average="mean")) == found
    with pytest.raises(AdapterError, match="median"):
        parse("go_bench", plain, Settings(average="median"))


def test_json_stream(stream: str) -> None:
    events = [json.loads(line) for line in stream.splitlines()]
    assert events and all("Action" in event for event in events)  # really a test2json stream
    found = parse("go_bench", stream)
    check_plausible(found)
    printed = "".join(e.get("Output", "") for e in events if e["Action"] == "output")
    assert parse("go_bench", printed) == found  # the same as the text the events carry
    assert parse("go", stream) == found
    assert parse("magic", stream) == found
