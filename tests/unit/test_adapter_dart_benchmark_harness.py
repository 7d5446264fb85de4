"""dart_benchmark_harness: ``<name>(RunTime): <us> us.`` lines -> latency (mean) in ns."""

from __future__ import annotations

import pytest

from benchrunner.adapters import AdapterError, Measurement, Settings, parse
from tests.unit.adapter_samples import assert_measurements, sample


def test_sample() -> None:
    text = sample("dart_benchmark_harness", "two.txt")
    found = parse("dart_benchmark_harness", text)
    assert_measurements(
        found,
        [
            Measurement("JsonParse", "latency", 12_500),
            Measurement("ListSort", "latency", 1_024_250),
        ],
    )
    assert parse("dart_benchmark_harness", text, Settings(average="mean")) == found
    assert parse("dart", text) == found
    assert parse("magic", text) == found


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("  Padded name (RunTime):   3 us.  ", Measurement("Padded name", "latency", 3_000)),
        ("A(RunTime): 1 us.(RunTime): 2 us.", None),
        ("Odd(RunTime)(RunTime): 4.5 us.", Measurement("Odd(RunTime)", "latency", 4_500)),
        ("NoName(RunTime): 1 ms.", None),
        ("NoSpace(RunTime): 1us.", None),
        ("(RunTime): 1 us.", None),
        ("Bad(RunTime): 1.2.3 us.", None),
    ],
)
def test_line_shapes(line: str, expected: Measurement | None) -> None:
    if expected is None:
        with pytest.raises(AdapterError, match=r"^dart_benchmark_harness: no '<name>\(RunTime\)"):
            parse("dart_benchmark_harness", line)
    else:
        assert_measurements(parse("dart_benchmark_harness", line), [expected])


@pytest.mark.parametrize(
    ("text", "settings", "message"),
    [
        ("A(RunTime): 1 us.", Settings(average="median"), "settings.average 'median'"),
        ("A(RunTime): 1" + "0" * 400 + " us.", Settings(), "line 1 must be finite"),
        ("n" * 1025 + "(RunTime): 1 us.", Settings(), "benchmark name must be 1-1024"),
    ],
)
def test_unreadable_output_says_why(text: str, settings: Settings, message: str) -> None:
    with pytest.raises(AdapterError, match=f"^dart_benchmark_harness: .*{message}"):
        parse("dart_benchmark_harness", text, settings)
