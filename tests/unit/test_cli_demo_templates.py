"""The demo templates `benchrunner up` installs load, and each prints metrics the server parses."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from importlib import resources
from pathlib import Path

import pytest

from benchrunner import adapters
from benchrunner.cli.local_setup import ensure_templates
from benchrunner.core.templates import TemplateRegistry


@pytest.fixture(scope="module")
def registry() -> TemplateRegistry:
    text = resources.files("benchrunner").joinpath("demo_templates.toml").read_text("utf-8")
    return TemplateRegistry.parse(tomllib.loads(text), source="demo_templates.toml")


def test_the_three_demo_templates_are_there(registry: TemplateRegistry) -> None:
    assert registry.names() == ["bench.noop", "bench.python-loop", "bench.sleep"]
    assert registry.get("bench.noop").args == {}
    loop = registry.get("bench.python-loop").args["n"]
    assert (loop.type, loop.minimum, loop.maximum, loop.default) == (
        "int",
        1,
        100_000_000,
        1_000_000,
    )


@pytest.mark.parametrize(
    ("name", "args", "benchmark"),
    [
        ("bench.sleep", {"ms": "1"}, "sleep"),
        ("bench.noop", {}, "noop"),
        ("bench.python-loop", {"n": "1000"}, "python-loop"),
    ],
)
def test_each_template_prints_bencher_metric_format(
    registry: TemplateRegistry, name: str, args: dict[str, str], benchmark: str
) -> None:
    argv = registry.get(name).argv(args)
    assert argv[0] == "python3"
    done = subprocess.run(
        [sys.executable, *argv[1:]], capture_output=True, text=True, timeout=30, check=True
    )
    [measurement] = adapters.parse("magic", done.stdout)
    assert (measurement.benchmark, measurement.measure) == (benchmark, "latency")
    assert measurement.value >= 0


def test_the_sleep_reports_its_latency_in_nanoseconds(registry: TemplateRegistry) -> None:
    """Latency's unit is the nanosecond: a 5 ms sleep is about 5,000,000, not 5 (milliseconds)
    nor 0.005 (seconds)."""
    argv = registry.get("bench.sleep").argv({"ms": "5"})
    done = subprocess.run(
        [sys.executable, *argv[1:]], capture_output=True, text=True, timeout=30, check=True
    )
    [measurement] = adapters.parse("magic", done.stdout)
    assert 5_000_000 <= measurement.value < 5_000_000_000


def test_ensure_templates_writes_once_and_keeps_user_edits(tmp_path: Path) -> None:
    path = ensure_templates(tmp_path)
    assert TemplateRegistry.load(path).names() == [
        "bench.noop",
        "bench.python-loop",
        "bench.sleep",
    ]
    path.write_text("# mine\n")
    assert ensure_templates(tmp_path).read_text() == "# mine\n"


def test_sleep_reports_the_time_slept_in_nanoseconds(registry: TemplateRegistry) -> None:
    """Latency is measured in nanoseconds: 20 ms slept is at least 20,000,000 ns, never "20"."""
    argv = registry.get("bench.sleep").argv({"ms": "20"})
    done = subprocess.run(
        [sys.executable, *argv[1:]], capture_output=True, text=True, timeout=30, check=True
    )
    [measurement] = adapters.parse("magic", done.stdout)
    assert 20_000_000 <= measurement.value < 20_000_000 * 50
