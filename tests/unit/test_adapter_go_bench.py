"""go_bench: go test -bench output, plain and as go test -json events, as Bencher reads it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchrunner.adapters import AdapterError, Measurement, Settings, parse
from benchrunner.adapters.go_test2json import console_lines

SAMPLES = Path(__file__).parents[1] / "adapter_samples" / "go_bench"

PLAIN = [
    # -count 2: a report keeps the last of BenchmarkPut-4's results (1058).
    Measurement("BenchmarkPut-4", "latency", 1058.0),
    Measurement("BenchmarkGet/hit-4", "latency", 241.5),
    Measurement("BenchmarkGet/miss_path-4", "latency", 118.25),
    Measurement("BenchmarkCopy", "latency", 5000.0),  # MB/s is not read
    Measurement("BenchmarkScan-4", "latency", 12_345_678.0),  # nor is keys/op
    # BenchmarkBroken-4's "NaN ns/op" is not a number: passed over.
]
# In the order each line was complete: codec's line arrived whole before kv's split one.
STREAM = [
    Measurement("BenchmarkEncode-4", "latency", 402.5),
    Measurement("BenchmarkPut-4", "latency", 1042.0),
    Measurement("BenchmarkGet/hit-4", "latency", 241.5),
    Measurement("BenchmarkGet/miss-4", "latency", 118.25),
    Measurement("BenchmarkDecode-4", "latency", 612.0),  # last output, no final newline
]


def sample(name: str) -> str:
    return (SAMPLES / name).read_text(encoding="utf-8")


@pytest.mark.parametrize(("name", "expected"), [("plain.txt", PLAIN), ("test2json.jsonl", STREAM)])
def test_samples(name: str, expected: list[Measurement]) -> None:
    text = sample(name)
    assert parse("go_bench", text) == expected
    assert parse("go_bench", text, Settings(average="mean")) == expected
    assert parse("go_bench", text.replace("\n", "\r\n")) == expected
    assert parse("go", text) == expected
    assert parse("magic", text) == expected


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("BenchmarkA-8   \t 5000000\t\t325 ns/op", Measurement("BenchmarkA-8", "latency", 325.0)),
        ("BenchmarkA 1,000 2,500.5 ns/op", Measurement("BenchmarkA", "latency", 2500.5)),
        ("BenchmarkA 10 3 ms/op", Measurement("BenchmarkA", "latency", 3_000_000.0)),
        ("BenchmarkA 10 3 µs/op", Measurement("BenchmarkA", "latency", 3_000.0)),
        ("BenchmarkA 10 3 s/op", Measurement("BenchmarkA", "latency", 3e9)),
        ("BenchmarkA 10 0.5 ps/op", Measurement("BenchmarkA", "latency", 0.0005)),
        (
            "BenchmarkA\t10\t3 ns/op\t  4.000 units\t5 B/op",
            Measurement("BenchmarkA", "latency", 3.0),
        ),
        ("Benchmark/x=y\u00e9 10 3 ns/op", Measurement("Benchmark/x=y\u00e9", "latency", 3.0)),
    ],
)
def test_result_lines(line: str, expected: Measurement) -> None:
    assert parse("go_bench", line + "\n") == [expected]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "PASS\nok  \texample.org/kv\t0.010s\n",
        "\x00\xff\xfe garbage \x01",
        "BenchmarkA 10 3 ns/iter",  # not per operation
        "BenchmarkA 10 3 ns/op trailing",  # what follows must start with a number
        "BenchmarkA 10 3 ns/op 4.0",  # ... and a blank after it, as in Bencher
        "BenchmarkA 10 3 ns/op ",
        "BenchmarkA ten 3 ns/op",
        "BenchmarkA , 3 ns/op",  # no digit in the iterations
        "BenchmarkA 10 -3 ns/op",
        "BenchmarkA 10 3e2 ns/op",
        "BenchmarkA 10 1.2.3 ns/op",
        "BenchmarkA 10 3 min/op",
        "  BenchmarkA 10 3 ns/op",
        "TestA 10 3 ns/op",
        "test fib ... bench:       1,234 ns/iter (+/- 56)",  # Rust's libtest
        '{"Action":"output","Package":"p","Output":"PASS\\n"}',
        '{"Action":"output","Package":"p","Output":7}',
        '{"Action":"run","Package":"p","Output":"BenchmarkA 10 3 ns/op\\n"}',
        '{"Output":"BenchmarkA 10 3 ns/op\\n"}',  # no Action: not an event
        "[" * 100_000 + "]" * 100_000,
        "{" * 100_000,
        "Benchmark" + " " * 10_000_000 + "1 ns/op",
        "BenchmarkA 1 " + "1." * 5_000_000 + " ns/op",
        "BenchmarkA-8 \t 10\t 3 ns/op\t 4\n" * 500_000,  # 10 MB of nearly results
    ],
)
def test_no_result_found(text: str) -> None:
    with pytest.raises(AdapterError, match="go_bench: no 'Benchmark<name> <iterations>"):
        parse("go_bench", text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("BenchmarkA 1 " + "9" * 400 + " ns/op", "must be finite"),
        ("BenchmarkA 1 " + "9" * 305 + " s/op", "is too large"),
        ("Benchmark\x00 1 3 ns/op", "NUL character"),
        ("Benchmark" + "a" * 1100 + " 1 3 ns/op", "benchmark name must be 1-1024 characters"),
    ],
)
def test_unreadable_output_says_why(text: str, message: str) -> None:
    with pytest.raises(AdapterError, match=message):
        parse("go_bench", text)


def test_median_is_not_read_as_bencher_does_not() -> None:
    with pytest.raises(AdapterError, match=r"settings\.average 'median' cannot be read"):
        parse("go_bench", sample("plain.txt"), Settings(average="median"))


def test_events_and_plain_lines_mix() -> None:
    """stderr merged into the stream, and a package whose lines arrive one piece at a time."""
    pieces = ["Benchmark", "Slow-2 \t", "      3\t", "  1.5 ms/op", "\n", "PASS\n"]
    events = [json.dumps({"Action": "output", "Package": "q", "Output": p}) for p in pieces]
    text = "\n".join(["# example.org/q", *events, "go: warning: something"])
    assert list(console_lines(text)) == [
        "# example.org/q",
        "BenchmarkSlow-2 \t      3\t  1.5 ms/op",
        "PASS",
        "go: warning: something",
    ]
    assert parse("go_bench", text) == [Measurement("BenchmarkSlow-2", "latency", 1_500_000.0)]


def test_many_small_events_read_in_linear_time() -> None:
    event = json.dumps({"Action": "output", "Package": "p", "Output": "x"})
    text = "\n".join([event] * 200_000) + "\n" + event.replace('"x"', '" 1 2 ns/op\\n"')
    with pytest.raises(AdapterError, match="go_bench: no 'Benchmark"):
        parse("go_bench", text)
