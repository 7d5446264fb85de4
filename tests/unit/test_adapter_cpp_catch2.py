"""cpp_catch2: Catch2's console benchmark table, as Bencher v0.6.12 reads it: benchmarks named
``<test case>: <benchmark>``, the mean with the mean -/+ the std dev as bounds."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchrunner.adapters import AdapterError, Measurement, Settings, parse

SAMPLES = Path(__file__).parents[1] / "adapter_samples" / "cpp_catch2"

V2 = [
    Measurement(
        "String building: append 16 chars", "latency", 58.25, 55.75, 60.75
    ),  # mean -/+ std dev
    Measurement(
        "String building: reserve then append", "latency", 10_500.0, 9_750.0, 11_250.0
    ),  # us, std in ns
    # A name Catch2 wrapped over two rows, padded to the table's width, is joined.
    Measurement(
        "Parsing: parse a configuration file that is long enough to wrap onto a second row",
        "latency",
        1_250_000.0,
        1_125_000.0,
        1_375_000.0,
    ),
    # Estimated in minutes (2.5 m); mean in seconds, std dev in milliseconds.
    Measurement("Parsing: parse, huge", "latency", 1.5e9, 1.48e9, 1.52e9),
]
V3 = [
    Measurement("Hashing: fnv1a 64 bytes", "latency", 9.75, 9.25, 10.25),
    Measurement("Hashing: sha256 4 KiB", "latency", 22_500.0, 21_000.0, 24_000.0),  # μs
]


def sample(name: str) -> str:
    return (SAMPLES / name).read_text(encoding="utf-8")


@pytest.mark.parametrize(("name", "expected"), [("v2.txt", V2), ("v3.txt", V3)])
def test_samples(name: str, expected: list[Measurement]) -> None:
    text = sample(name)
    assert parse("cpp_catch2", text) == expected
    assert parse("cpp_catch2", text, Settings(average="mean")) == expected
    assert parse("cpp_catch2", text.replace("\n", "\r\n")) == expected
    assert parse("cpp", text) == expected
    assert parse("magic", text) == expected


PAGE_BREAK = "-" * 79 + "\n"
HEADER = PAGE_BREAK + "case\n" + PAGE_BREAK
BODY = (
    "{name}                                      100             2      1.5 ms \n"
    "                                          250 ns        240 ns        260 ns \n"
    "                                           10 ns          5 ns         15 ns \n"
    "\n"
)
ROWS = HEADER + BODY


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (ROWS.format(name="one"), [Measurement("case: one", "latency", 250.0, 240.0, 260.0)]),
        # No blank after the last column (Bencher wants one): still read.
        (
            ROWS.format(name="bare").replace(" \n", "\n"),
            [Measurement("case: bare", "latency", 250.0, 240.0, 260.0)],
        ),
        # Text printed before the table row is not part of the name (not padded like a row).
        (
            "setting up\n" + ROWS.format(name="two"),
            [Measurement("case: two", "latency", 250.0, 240.0, 260.0)],
        ),
        # A name printed twice: a report keeps its last result.
        (
            ROWS.format(name="dup") + ROWS.format(name="dup").replace("250 ns", "350 ns"),
            [Measurement("case: dup", "latency", 350.0, 340.0, 360.0)],
        ),
        # Thousands separators, as Bencher reads numbers.
        (
            ROWS.format(name="big").replace("250 ns", "1,250 ns"),
            [Measurement("case: big", "latency", 1250.0, 1240.0, 1260.0)],
        ),
        # A first row whose mean row is missing is passed over.
        (
            "lost      100   2   1.5 ms \n" + ROWS.format(name="kept"),
            [Measurement("case: kept", "latency", 250.0, 240.0, 260.0)],
        ),
    ],
)
def test_rows(text: str, expected: list[Measurement]) -> None:
    assert parse("cpp_catch2", text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\x00\xff\xfe garbage \x01",
        "All tests passed (3 assertions in 1 test case)\n",
        # --benchmark-no-analysis prints the mean only: not read (as in Bencher).
        "one                       5           325    366.233 ns \n",
        # A mean row that is not three durations.
        ROWS.format(name="x").replace("240 ns", "240 nsec"),
        ROWS.format(name="x").replace("240 ns", "-240 ns"),
        ROWS.format(name="x").replace("240 ns", "2.4e2 ns"),
        ROWS.format(name="x").replace("240 ns", "2.4.0 ns"),
        # Rows out of order.
        HEADER + BODY.format(name="x").split("\n", 1)[1],
        # Rows before any test case's header (Bencher v0.6.12 reads none either).
        BODY.format(name="x"),
        " " * 10_000_000 + "1 ns 2 ns 3 ns",
        "x  100  2  1.5 ms \n" * 600_000,
        ("a" * 78 + " \n") * 120_000,  # 10 MB of padded rows: name parts without a first row
    ],
)
def test_no_benchmark_found(text: str) -> None:
    with pytest.raises(AdapterError, match="cpp_catch2: no benchmark found"):
        parse("cpp_catch2", text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (ROWS.format(name="x").replace("250 ns", "9" * 400 + " ns"), "must be finite"),
        (ROWS.format(name="n\x00l"), "NUL character"),
        (HEADER + "w" * 1100 + " 100 2 1.5 ms\n", "benchmark name must be 1-1024 characters"),
    ],
)
def test_unreadable_output_says_why(text: str, message: str) -> None:
    with pytest.raises(AdapterError, match=message):
        parse("cpp_catch2", text)


def test_median_is_not_read_as_bencher_does_not() -> None:
    with pytest.raises(AdapterError, match=r"settings\.average 'median' cannot be read"):
        parse("cpp_catch2", sample("v2.txt"), Settings(average="median"))


def test_a_test_case_with_sections_and_wrapped_rows_names_the_benchmark() -> None:
    """As Bencher v0.6.12 names it: the header's rows trimmed and joined, then ``: ``, then the
    first row's name and the text Catch2 wrapped onto the mean row."""
    text = (
        PAGE_BREAK + "Parsing \n  with a section\n" + PAGE_BREAK + "\n"
        "parse a long                                       100             2      1.5 ms \n"
        "configuration                             250 ns        240 ns        260 ns \n"
        "                                           10 ns          5 ns         15 ns \n"
    )
    assert parse("cpp_catch2", text) == [
        Measurement(
            "Parsing with a section: parse a long configuration", "latency", 250.0, 240.0, 260.0
        )
    ]
