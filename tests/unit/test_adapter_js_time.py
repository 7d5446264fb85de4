"""js_time: console.time / console.timeEnd lines -> latency in nanoseconds."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchrunner.adapters import AdapterError, Measurement, Settings, parse
from tests.unit.measurements_close import assert_measurements

SAMPLES = Path(__file__).parents[1] / "adapter_samples" / "js_time"


def latency(name: str, nanoseconds: float) -> Measurement:
    return Measurement(name, "latency", nanoseconds)


@pytest.mark.parametrize(
    ("sample", "expected"),
    [
        (
            "browser.txt",  # Bencher's format; "1.5ms - timer ended" is not (integers only)
            [
                latency("parse", 1_520_000_000),
                latency("render page", 3_000_000),
                latency("step 2: resize - again", 75_000),
                latency("big", 12_500),
                latency("micro", 8_000),
            ],
        ),
        (
            "node.txt",  # Node.js's format, and one browser line among it
            [
                latency("load config", 412_000),
                latency("build index", 12_000_000),
                latency("compress", 1_250_000_000),
                latency("full import", 62_345_000_000),
                latency("nightly", 7_384_500_000_000),
                latency("parse", 1_520_000_000),
            ],
        ),
    ],
)
def test_sample(sample: str, expected: list[Measurement]) -> None:
    found = parse("js_time", (SAMPLES / sample).read_text())
    assert_measurements(found, expected)


@pytest.mark.parametrize(
    ("line", "nanoseconds"),
    [
        ("a: 7ps - timer ended", 0.007),
        ("a: 7ns - timer ended", 7),
        ("a: 7us - timer ended", 7_000),
        ("a: 7μs - timer ended", 7_000),
        ("a: 7ms - timer ended", 7_000_000),
        ("a: 7s - timer ended", 7_000_000_000),
        ("a:\t7s\t-\ttimer\tended", 7_000_000_000),
        ("a: 0ms", 0),
        ("a: 0.001ms", 1_000),
        ("a: 59.999s", 59_999_000_000),
        ("a: 0:00.001 (m:ss.mmm)", 1_000_000),
        ("a: 10:00:00.000 (h:mm:ss.mmm)", 36_000_000_000_000),
        ("a:: 1ms", 1_000_000),
    ],
)
def test_units(line: str, nanoseconds: float) -> None:
    (found,) = parse("js_time", line)
    assert found.value == pytest.approx(nanoseconds, rel=1e-12)


@pytest.mark.parametrize(
    "line",
    [
        ": 7ms - timer ended",
        ": 7ms",
        "a 7ms - timer ended",
        "a: 7 ms - timer ended",
        "a: 7min - timer ended",
        "a: 7.5ms - timer ended",
        "a: -7ms - timer ended",
        "a: 7ms - timer ended.",
        "a: 7ms - timer",
        "a: 7us",
        "a: 7",
        "a: .5ms",
        "a: 1e3ms",
        "a: ٣ms",
        "a: 1:02.345",
        "a: 1:02 (m:ss.mmm)",
        "a: 1:2:03.4 (m:ss.mmm)",
        "a: x:02.345 (m:ss.mmm)",
        "a: 1:02.345 (h:mm:ss.mmm)",
        "a: " + "9" * 13 + ":00.000 (m:ss.mmm)",
        "a: 7ms ",
        "a: 1.5s",
        "a: 1:2.345 (m:ss.mmm)",
        "a: 1:02:3.456 (h:mm:ss.mmm)",
        "a: 1:02.3456 (m:ss.mmm)",
    ],
)
def test_near_misses_are_not_timers(line: str) -> None:
    with pytest.raises(AdapterError, match="js_time: no '<label>: <n>ms - timer ended'"):
        parse("js_time", line)


@pytest.mark.parametrize(
    ("text", "settings", "message"),
    [
        ("a: 7ms", Settings("mean"), "has no mean or median"),
        ("a: 7ms", Settings("median"), "has no mean or median"),
        ("", Settings(), "no '<label>"),
        ("ok: 1ms\nbig: " + "9" * 400 + "ms", Settings(), "line 2: duration must be finite"),
        ("big: " + "9" * 300 + ".000s", Settings(), "line 1: .* too large"),
        ("\x00: 1ms", Settings(), "line 1: benchmark name .* NUL"),
        ("b" * 1025 + ": 1ms", Settings(), "line 1: benchmark name must be 1-1024"),
    ],
)
def test_errors_say_why(text: str, settings: Settings, message: str) -> None:
    with pytest.raises(AdapterError, match=message):
        parse("js_time", text, settings)


def test_language_group_and_magic_read_it_the_same() -> None:
    text = (SAMPLES / "browser.txt").read_text()
    assert parse("js", text) == parse("js_time", text)
    assert parse("magic", text) == parse("js_time", text)
