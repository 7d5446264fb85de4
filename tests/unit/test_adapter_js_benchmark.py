"""js_benchmark: Benchmark.js result lines -> throughput with ± as bounds."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchrunner.adapters import AdapterError, Average, Measurement, Settings, parse
from tests.unit.measurements_close import assert_measurements

SAMPLES = Path(__file__).parents[1] / "adapter_samples" / "js_benchmark"


def throughput(name: str, value: float, lower: float, upper: float) -> Measurement:
    return Measurement(name, "throughput", value, lower, upper)


@pytest.mark.parametrize(
    ("sample", "expected"),
    [
        (
            "strings.txt",
            [
                # value ∓ value * percent / 100
                throughput("split words", 2_345_678, 2_316_357.025, 2_374_998.975),
                throughput("join 3 x 4 words", 987_654.5, 982_716.2275, 992_592.7725),
                throughput("regexp x test", 12.5, 11.0, 14.0),
                throughput("tabbed", 7, 6.93, 7.07),
                throughput("  indented", 100, 98, 102),
            ],
        ),
        ("crlf.txt", [throughput("windows", 40, 38, 42), throughput("other", 1000, 999, 1001)]),
    ],
)
@pytest.mark.parametrize("average", [None, "median"])
def test_sample(sample: str, expected: list[Measurement], average: Average | None) -> None:
    text = (SAMPLES / sample).read_bytes().decode()
    found = parse("js_benchmark", text, Settings(average=average))
    assert_measurements(found, expected)


def test_language_group_and_magic_read_it_the_same() -> None:
    text = (SAMPLES / "strings.txt").read_text()
    assert parse("js", text) == parse("js_benchmark", text)
    assert parse("magic", text) == parse("js_benchmark", text)


@pytest.mark.parametrize(
    "line",
    [
        "fib x 1.2.3 ops/sec ±1% (3 runs sampled)",
        "fib x 1e3 ops/sec ±1% (3 runs sampled)",
        "fib x -5 ops/sec ±1% (3 runs sampled)",
        "fib x 5 ops/sec ±x% (3 runs sampled)",
        "fib x 5 ops/sec 1% (3 runs sampled)",
        "fib x 5 ops/sec ±1 (3 runs sampled)",
        "fib x 5 ops/sec ±1% (3.5 runs sampled)",
        "fib x 5 ops/sec ±1% (99999999999999999999999 runs sampled)",
        "fib x 5 ops/min ±1% (3 runs sampled)",
        "fib y 5 ops/sec ±1% (3 runs sampled)",
        "fib x 5 ops/sec ±1% (3 runs sampled).",
        "fib x 5 ops/sec ±1% (3 runs sampled) ",
        "fibx 5 ops/sec ±1% (3 runs sampled)",
        " x 5 ops/sec ±1% (3 runs sampled)",
    ],
)
def test_near_misses_are_not_results(line: str) -> None:
    with pytest.raises(AdapterError, match="js_benchmark: no '<name> x <n> ops/sec"):
        parse("js_benchmark", line)


@pytest.mark.parametrize(
    ("text", "settings", "message"),
    [
        ("fib x 5 ops/sec ±1% (3 runs sampled)", Settings("mean"), "prints no mean"),
        ("", Settings(), "no '<name> x <n> ops/sec"),
        ("n x " + "9" * 400 + " ops/sec ±1% (3 runs sampled)", Settings(), "line 1: ops/sec"),
        ("n x 1 ops/sec ±" + "9" * 400 + "% (3 runs sampled)", Settings(), "line 1: ±%"),
        ("n x 1e308 ops/sec ±1% (3 runs sampled)", Settings(), "no '<name>"),
        ("n x " + "9" * 308 + " ops/sec ±100% (3 runs sampled)", Settings(), "too large"),
        ("\x00 x 1 ops/sec ±1% (3 runs sampled)", Settings(), "line 1: benchmark name"),
        ("b" * 1025 + " x 1 ops/sec ±1% (3 runs sampled)", Settings(), "must be 1-1024"),
        ("\ud800 x 1 ops/sec ±1% (3 runs sampled)", Settings(), "lone surrogate"),
    ],
)
def test_errors_say_why(text: str, settings: Settings, message: str) -> None:
    with pytest.raises(AdapterError, match=message):
        parse("js_benchmark", text, settings)


def test_other_lines_around_results_are_skipped() -> None:
    text = "a\nb x 1 ops/sec ±1% (3 runs sampled)\n" + "9" * 400 + " x\n\x00\xff garbage"
    assert [m.benchmark for m in parse("js_benchmark", text)] == ["b"]
