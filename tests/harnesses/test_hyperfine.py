"""hyperfine for real (Debian package ``hyperfine``): two trivial commands, a few runs, no shell
in between; the ``--export-json`` file read by ``shell_hyperfine`` and checked against the
times hyperfine recorded in it."""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
from pathlib import Path

import pytest

from benchrunner.adapters import Settings, parse
from tests.unit.approx_measurements import spreads


def _hyperfine(directory: Path, name: str, *arguments: str) -> str:
    if shutil.which("hyperfine") is None:
        pytest.skip("hyperfine is not installed (tools/system-packages.sh installs it)")
    export = directory / f"{name}.json"
    result = subprocess.run(
        ["hyperfine", "--shell=none", "--style=basic", "--export-json", str(export), *arguments],
        cwd=directory,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return export.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """``two``: ``true`` (named ``nothing``) and ``sleep 0.02``, 4 runs each; ``once``: 1 run."""
    directory = tmp_path_factory.mktemp("hyperfine")
    two = ["--runs", "4", "--warmup", "1", "--command-name", "nothing", "true", "sleep 0.02"]
    return {
        "two": _hyperfine(directory, "two", *two),
        "once": _hyperfine(directory, "once", "--runs", "1", "true"),
    }


def test_every_command_is_a_latency_as_hyperfine_timed_it(exports: dict[str, str]) -> None:
    text = exports["two"]
    recorded = json.loads(text)["results"]
    by_mean = parse("shell_hyperfine", text)
    by_median = parse("shell_hyperfine", text, Settings(average="median"))
    assert [m.benchmark for m in by_mean] == ["nothing", "sleep 0.02"]
    assert [m.benchmark for m in by_median] == ["nothing", "sleep 0.02"]
    for result, mean, median in zip(recorded, by_mean, by_median, strict=True):
        times = result["times"]  # each run's wall time in seconds
        assert len(times) == 4
        assert mean.measure == median.measure == "latency"
        assert mean.value == pytest.approx(statistics.mean(times) * 1e9, rel=1e-9)
        spread = statistics.stdev(times) * 1e9
        assert spreads(mean) == pytest.approx((spread, spread), rel=1e-6)
        assert median.value == pytest.approx(statistics.median(times) * 1e9, rel=1e-9)
        assert median.lower_value == pytest.approx(min(times) * 1e9, rel=1e-9)
        assert median.upper_value == pytest.approx(max(times) * 1e9, rel=1e-9)
    nothing, sleep = by_median
    assert 0 < nothing.value < 20e6 <= sleep.value < 2e9  # sleep 0.02 takes at least 20 ms


def test_a_single_run_has_no_spread_by_mean(exports: dict[str, str]) -> None:
    [result] = json.loads(exports["once"])["results"]
    assert result["stddev"] is None
    [mean] = parse("shell_hyperfine", exports["once"])
    assert mean.value == pytest.approx(result["times"][0] * 1e9, rel=1e-9)
    assert (mean.lower_value, mean.upper_value) == (None, None)
    [median] = parse("shell_hyperfine", exports["once"], Settings(average="median"))
    assert median.lower_value == median.value == median.upper_value


@pytest.mark.parametrize("export", ["two", "once"])
def test_language_and_magic_read_it_as_the_adapter(exports: dict[str, str], export: str) -> None:
    text = exports[export]
    for average in (None, "mean", "median"):
        named = parse("shell_hyperfine", text, Settings(average=average))
        assert parse("shell", text, Settings(average=average)) == named
        assert parse("magic", text, Settings(average=average)) == named
