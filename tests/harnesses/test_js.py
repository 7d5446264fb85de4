"""The JavaScript harnesses for real: Benchmark.js, console.time (Node.js) and Vitest bench.

One session fixture installs the pinned project in ``tests/harnesses/js`` with ``npm ci`` into
a temporary directory (``--prefer-offline``: the npm cache is reused, the registry is asked
only for what it lacks); each harness then runs a tiny benchmark once, and the tests feed
exactly what it printed, or the file it wrote, to the adapter.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from benchrunner.adapters import Measurement, Settings, parse

PROJECT = Path(__file__).parent / "js"
PROJECT_FILES = ("package.json", "package-lock.json", "suite.cjs", "timers.cjs", "vitest.config.js")
INSTALL_SECONDS = 300
RUN_SECONDS = 120


@dataclass(frozen=True)
class Printed:
    stdout: str
    stderr: str


def _run(args: list[str], cwd: Path, timeout: float) -> Printed:
    environment = {**os.environ, "NO_COLOR": "1", "FORCE_COLOR": "0"}
    done = subprocess.run(
        args, cwd=cwd, env=environment, capture_output=True, text=True, timeout=timeout
    )
    if done.returncode != 0:
        raise AssertionError(f"{args} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return Printed(done.stdout, done.stderr)


@pytest.fixture(scope="session")
def js_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The harness project, installed from its lock file (no package install scripts run)."""
    npm = shutil.which("npm")
    if shutil.which("node") is None or npm is None:
        pytest.skip("Node.js and npm are needed for the JavaScript harness tests")
    project = tmp_path_factory.mktemp("js-harnesses")
    for name in PROJECT_FILES:
        shutil.copy2(PROJECT / name, project / name)
    shutil.copytree(PROJECT / "bench", project / "bench")
    install = [npm, "ci", "--ignore-scripts", "--prefer-offline", "--no-audit", "--no-fund"]
    _run([*install, "--loglevel=error"], project, INSTALL_SECONDS)
    return project


@pytest.fixture(scope="session")
def benchmark_js(js_project: Path) -> Printed:
    return _run(["node", "suite.cjs"], js_project, RUN_SECONDS)


@pytest.fixture(scope="session")
def node_timers(js_project: Path) -> Printed:
    return _run(["node", "timers.cjs"], js_project, RUN_SECONDS)


@pytest.fixture(scope="session")
def vitest_report(js_project: Path) -> str:
    vitest = str(js_project / "node_modules" / ".bin" / "vitest")
    _run([vitest, "bench", "--run", "--outputJson", "report.json"], js_project, RUN_SECONDS)
    return (js_project / "report.json").read_text()


def assert_language_and_magic_agree(adapter: str, language: str, text: str) -> None:
    assert parse(language, text) == parse(adapter, text)
    assert parse("magic", text) == parse(adapter, text)


def test_benchmark_js(benchmark_js: Printed) -> None:
    found = parse("js_benchmark", benchmark_js.stdout)
    # The suite wrote Benchmark.js's own figures to stderr; it prints hz rounded (to 2 places
    # below 100 ops/sec, else to the unit) and the relative margin of error to 2 places.
    figures = json.loads(benchmark_js.stderr)
    assert [(m.benchmark, m.measure) for m in found] == [
        ("fib(10)", "throughput"),
        ("sort x 3 items", "throughput"),
    ]
    for measurement, figure in zip(found, figures, strict=True):
        assert measurement.value == pytest.approx(figure["hz"], abs=0.5)
        assert measurement.value > 0
        assert measurement.lower_value is not None and measurement.upper_value is not None
        margin = measurement.upper_value - measurement.value
        assert measurement.value - measurement.lower_value == pytest.approx(margin)
        assert margin / measurement.value * 100 == pytest.approx(figure["rme"], abs=0.006)
    assert_language_and_magic_agree("js_benchmark", "js", benchmark_js.stdout)
    assert parse("js_benchmark", benchmark_js.stdout, Settings(average="median")) == found


def test_console_time(node_timers: Printed) -> None:
    found = parse("js_time", node_timers.stdout)
    printed = {
        label: float(duration.removesuffix("ms")) * 1e6
        for label, duration in (
            line.rsplit(": ", 1) for line in node_timers.stdout.splitlines() if ": " in line
        )
    }
    assert found == [
        Measurement("sum 10k", "latency", printed["sum 10k"]),
        Measurement("label: with colon", "latency", printed["label: with colon"]),
    ]
    assert all(0 < m.value < 60e9 for m in found)
    assert_language_and_magic_agree("js_time", "js", node_timers.stdout)


VITEST_NAMES = [
    "bench/math.bench.js > top level",
    "bench/math.bench.js > math > add",
    "bench/math.bench.js > math > sort",
]


def _reported(report: str) -> list[dict[str, float]]:
    """Tinybench's figures per benchmark, in report order."""
    return [
        benchmark
        for file in json.loads(report)["files"]
        for group in file["groups"]
        for benchmark in group["benchmarks"]
    ]


def test_vitest_mean(vitest_report: str) -> None:
    found = parse("js_vitest", vitest_report)
    reported = _reported(vitest_report)
    assert [m.benchmark for m in found] == [name for name in VITEST_NAMES for _ in (1, 2)]
    assert [m.measure for m in found] == ["latency", "throughput"] * 3
    pairs = zip(found[::2], found[1::2], strict=True)
    for (latency, throughput), figures in zip(pairs, reported, strict=True):
        mean, sd = figures["mean"] * 1e6, figures["sd"] * 1e6
        assert (latency.value, latency.lower_value, latency.upper_value) == pytest.approx(
            (mean, mean - sd, mean + sd)
        )
        error = figures["hz"] * figures["rme"] / 100
        assert (throughput.value, throughput.lower_value, throughput.upper_value) == pytest.approx(
            (figures["hz"], figures["hz"] - error, figures["hz"] + error)
        )
        # Tinybench's hz is operations per second of the mean period in milliseconds.
        assert throughput.value == pytest.approx(1e9 / latency.value, rel=1e-6)
    assert_language_and_magic_agree("js_vitest", "js", vitest_report)


def test_vitest_median(vitest_report: str) -> None:
    found = parse("js_vitest", vitest_report, Settings(average="median"))
    latencies = [m for m in found if m.measure == "latency"]
    assert [m.benchmark for m in latencies] == VITEST_NAMES
    for latency, figures in zip(latencies, _reported(vitest_report), strict=True):
        # Numbers are read as Bencher reads them, which can be one unit in the last place away
        # from Python's nearest float (docs/reference/adapters.md).
        assert latency.value == pytest.approx(figures["median"] * 1e6, rel=1e-15, abs=0)
        assert (latency.measure, latency.lower_value, latency.upper_value) == (
            "latency",
            None,
            None,
        )
        assert latency.value > 0
