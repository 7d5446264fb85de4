"""airspeed velocity for real: a tiny project (asv.conf.json, a git repository, a benchmark
suite with a time, a failing, a memory and a tracking benchmark) run by ``asv run`` in the
running interpreter (``--python=same``, no environment to build, no network); its console
output read by ``python_asv`` and checked against the results asv saved for the same run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from asv.results import Results  # type: ignore[import-untyped]

from benchrunner.adapters import AdapterError, Settings, parse
from tests.unit.approx_measurements import spreads

CONFIG = {
    "version": 1,
    "project": "tiny",
    "repo": ".",
    "branches": ["HEAD"],
    "environment_type": "existing",
    "benchmark_dir": "benchmarks",
    "env_dir": ".asv/env",
    "results_dir": ".asv/results",
    "html_dir": ".asv/html",
}

# One process, three samples of 100 calls: a real spread in a fraction of a second.
SUITE = """
class Suite:
    rounds = 1
    repeat = 3
    number = 100
    warmup_time = 0.0

    def time_sum(self):
        sum(range(300))

    def time_sorted(self):
        sorted(range(200, 0, -1))

    def time_fails(self):
        raise RuntimeError("this benchmark fails on purpose")

    def mem_list(self):
        return [0] * 1000

    def track_answer(self):
        return 42
"""

TIMED = ["bench.Suite.time_sorted", "bench.Suite.time_sum"]


@dataclass(frozen=True)
class AsvRun:
    console: str
    results: Results


def _run(arguments: list[str], directory: Path, env: dict[str, str], exits: int = 0) -> str:
    result = subprocess.run(
        arguments, cwd=directory, env=env, capture_output=True, text=True, timeout=180
    )
    assert result.returncode == exits, result.stdout + result.stderr
    return result.stdout


@pytest.fixture(scope="module")
def asv_run(tmp_path_factory: pytest.TempPathFactory) -> AsvRun:
    directory = tmp_path_factory.mktemp("asv")
    (directory / "asv.conf.json").write_text(json.dumps(CONFIG), encoding="utf-8")
    (directory / "benchmarks").mkdir()
    (directory / "benchmarks" / "__init__.py").write_text("", encoding="utf-8")
    (directory / "benchmarks" / "bench.py").write_text(SUITE, encoding="utf-8")
    # asv keeps its machine description in ~/.asv-machine.json: a home of the test's own.
    env = {**os.environ, "HOME": str(directory), "PYTHONIOENCODING": "utf-8"}
    git = ["git", "-c", "user.name=benchrunner", "-c", "user.email=tests@benchrunner.invalid"]
    _run([*git, "init", "-q", "."], directory, env)
    _run([*git, "add", "-A"], directory, env)
    _run([*git, "commit", "-q", "-m", "benchmarks"], directory, env)
    commit = _run(["git", "rev-parse", "HEAD"], directory, env).strip()
    asv = [sys.executable, "-m", "asv"]
    _run([*asv, "machine", "--yes", "--machine", "ci"], directory, env)
    console = _run(
        [*asv, "run", "--python=same", "--machine", "ci", "--set-commit-hash", commit],
        directory,
        env,
        exits=2,  # asv's status when a benchmark failed: time_fails does, on purpose
    )
    [saved] = (directory / ".asv" / "results" / "ci").glob(f"{commit[:8]}-*.json")
    return AsvRun(console, Results.load(str(saved)))


def test_timed_benchmarks_are_latencies_as_asv_measured_them(asv_run: AsvRun) -> None:
    found = parse("python_asv", asv_run.console)
    assert sorted(m.benchmark for m in found) == TIMED  # failed, memory and tracking rows skipped
    assert parse("python_asv", asv_run.console, Settings(average="median")) == found
    for measurement in found:
        [median] = asv_run.results.get_result_value(measurement.benchmark, [])
        [stats] = asv_run.results.get_result_stats(measurement.benchmark, [])
        assert measurement.measure == "latency"
        assert 10 < measurement.value < 1e8  # tens of ns to a few ms per call, in ns
        # asv prints the median to 3 significant digits and half the IQR to 1 or 2.
        assert measurement.value == pytest.approx(median * 1e9, rel=6e-3)
        half_iqr = (stats["q_75"] - stats["q_25"]) / 2 * 1e9
        below, spread = spreads(measurement)
        assert spread == pytest.approx(half_iqr, rel=0.5, abs=0.01 * measurement.value)
        assert below == pytest.approx(spread)


def test_the_rows_bencher_skips_are_there(asv_run: AsvRun) -> None:
    for name, shown in [
        ("bench.Suite.time_fails", "failed"),
        ("bench.Suite.mem_list", "k"),
        ("bench.Suite.track_answer", "42"),
    ]:
        [row] = [line for line in asv_run.console.splitlines() if f" {name} " in line]
        assert row.endswith(shown), row


def test_asv_has_no_mean(asv_run: AsvRun) -> None:
    with pytest.raises(AdapterError, match="python_asv: asv prints a median"):
        parse("python_asv", asv_run.console, Settings(average="mean"))


def test_language_and_magic_read_it_as_the_adapter(asv_run: AsvRun) -> None:
    named = parse("python_asv", asv_run.console)
    assert parse("python", asv_run.console) == named
    assert parse("magic", asv_run.console) == named
