"""cpp_google: Google Benchmark's JSON, as Bencher reads it (samples in adapter_samples/)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchrunner.adapters import AdapterError, Measurement, Settings, parse

SAMPLES = Path(__file__).parents[1] / "adapter_samples" / "cpp_google"


def sample(name: str) -> str:
    return (SAMPLES / name).read_text(encoding="utf-8")


def document(*entries: object) -> str:
    return json.dumps({"context": {"caches": []}, "benchmarks": list(entries)})


def entry(**fields: object) -> dict[str, object]:
    return {"name": "BM_x", "run_type": "iteration", "real_time": 1.5, "time_unit": "ns", **fields}


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "single.json",
            [
                Measurement("BM_concat/16", "latency", 125.0),
                Measurement("BM_parse_file", "latency", 2_500_000.0),  # 2.5 ms
                Measurement("BM_hash<std::string>/threads:2", "latency", 75_000.0),  # 75 us
                Measurement("BM_sleep", "latency", 1_500_000_000.0),  # 1.5 s
            ],
        ),
        (
            "repetitions.json",
            [
                # Three repetitions under one name: a report keeps the last (16 us).
                Measurement("BM_sort/1024", "latency", 16_000.0),
                Measurement("BM_sort/1024_mean", "latency", 13_000.0),
                Measurement("BM_sort/1024_median", "latency", 13_000.0),
                Measurement("BM_sort/1024_stddev", "latency", 3_000.0),
                # _cv (a fraction), the failed BM_broken, _BigO and _RMS are left out.
                Measurement("BM_insert/8", "latency", 300.0),
                Measurement("BM_insert/64", "latency", 2_400.0),
            ],
        ),
    ],
)
def test_samples(name: str, expected: list[Measurement]) -> None:
    text = sample(name)
    assert parse("cpp_google", text) == expected
    assert parse("cpp_google", text, Settings(average="mean")) == expected
    assert parse("cpp", text) == expected
    assert parse("magic", text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json", "not Google Benchmark JSON"),
        ("[]", "expected an object with 'context'"),
        ('{"benchmarks": []}', "expected an object with 'context'"),
        ('{"context": {}, "benchmarks": []}', "and its 'caches'"),
        ('{"context": {"caches": []}, "benchmarks": {}}', "a 'benchmarks' list"),
        ('{"fib": {"latency": {"value": 1}}}', "expected an object with 'context'"),
        (document(), "'benchmarks' has no entry with a time"),
        (document(entry(error_occurred=True)), "'benchmarks' has no entry with a time"),
        (document(7), r"benchmarks\[0\] must be an object"),
        (document(entry(), entry(name=None)), r"benchmarks\[1\]\.name must be a string"),
        (document(entry(real_time="1")), r"benchmarks\[0\]\.real_time must be a number"),
        (document(entry(real_time=True)), r"real_time must be a number"),
        (document({"name": "BM_x", "time_unit": "ns"}), r"real_time is missing"),
        (document(entry(time_unit=None)), r"time_unit must be a string"),
        (document(entry(time_unit="min")), "unknown time unit 'min'"),
        (document(entry(real_time=1.0e308, time_unit="s")), "is too large"),
        (document(entry()).replace("1.5", "1e999"), "must be finite"),
        (document(entry()).replace("1.5", "1" + "0" * 400), "too large for a float"),
        (document(entry()).replace("1.5", "NaN"), "must be finite"),
        (document(entry(name="BM\x00x")), "NUL character"),
        (document(entry(name="")), "benchmark name must be 1-1024 characters"),
        (document(entry(name="B" * 1025)), "benchmark name must be 1-1024 characters"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ("\x00\xff\xfe garbage \x01", "not Google Benchmark JSON"),
    ],
)
def test_unreadable_output_says_why(text: str, message: str) -> None:
    with pytest.raises(AdapterError, match=message):
        parse("cpp_google", text)


def test_median_is_not_read_as_bencher_does_not() -> None:
    with pytest.raises(AdapterError, match=r"settings.average 'median' cannot be read.*_median"):
        parse("cpp_google", sample("repetitions.json"), Settings(average="median"))


def test_a_large_document_parses() -> None:
    entries = [entry(name=f"BM_{i}", real_time=i + 0.5) for i in range(20_000)]
    found = parse("cpp_google", document(*entries))
    assert len(found) == 20_000
    assert found[-1] == Measurement("BM_19999", "latency", 19_999.5)
