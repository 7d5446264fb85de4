from __future__ import annotations

import pytest

from benchrunner.adapters import AdapterError, Average, Measurement, Settings, parse
from tests.unit.approx_measurements import assert_measurements, sample

TEXT = sample("python_asv", "run_two_environments.txt")

# Only time rows with a spread count; memory, tracking, failed, table, spread-less, minute and
# ASCII-fallback rows of the sample are skipped, as Bencher skips them.
EXPECTED = [
    Measurement("bench_text.Tokenize.time_tokenize", "latency", 812, 809, 815),
    Measurement("bench_text.Tokenize.time_split", "latency", 4_250, 4_200, 4_300),
    Measurement(
        "bench_text.Tokenize.time_parse_file", "latency", 12_500_000, 12_250_000, 12_750_000
    ),
    Measurement("bench_text.Tokenize.time_load_corpus", "latency", 1.5e9, 1.4e9, 1.6e9),
    Measurement("bench_text.Tokenize.time_micro_sign", "latency", 7_500, 7_000, 8_000),
]


@pytest.mark.parametrize("average", [None, "median"])
def test_console_output_gives_latency_per_timed_benchmark(average: Average | None) -> None:
    assert_measurements(parse("python_asv", TEXT, Settings(average=average)), EXPECTED)


def test_asv_has_no_mean() -> None:
    with pytest.raises(
        AdapterError, match=r"python_asv: asv prints a median .* 'mean' reads nothing"
    ):
        parse("python_asv", TEXT, Settings(average="mean"))


def test_language_and_magic_read_it_alike() -> None:
    named = parse("python_asv", TEXT)
    assert parse("python", TEXT) == named
    assert parse("magic", TEXT) == named


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            "[ 50.00%] ··· suite.time_a   1.5±0.5ps",
            Measurement("suite.time_a", "latency", 1.5e-3, 1e-3, 2e-3),
        ),
        ("[50.00%] ··· suite.time_a 2±1ns", Measurement("suite.time_a", "latency", 2, 1, 3)),
        (
            "[ 5.00%]\t·\tsuite.time_a \t2±1us",
            Measurement("suite.time_a", "latency", 2_000, 1_000, 3_000),
        ),
        ("[100.00%] ···· a 1,250±0ns\r", Measurement("a", "latency", 1_250, 1_250, 1_250)),
        ("[ 1%] · a.b 3.±.5ms", Measurement("a.b", "latency", 3e6, 2.5e6, 3.5e6)),
        ("[ 1.0%] ··· a.b\t 1±1s", Measurement("a.b\t", "latency", 1e9, 0, 2e9)),
    ],
)
def test_result_line_forms(line: str, expected: Measurement) -> None:
    assert_measurements(parse("python_asv", line), [expected])


@pytest.mark.parametrize(
    "line",
    [
        "[ 50.00%] ··· suite.time_a   1.5±0.5μs trailing",
        "[ 50.00%] ··· suite.time_a   1.5±0.5μs ",
        "[ 50.00%] ··· suite.time_a   1.5±0.5",
        "[ 50.00%] ··· suite.time_a   1.5±0.5k",
        "[ 50.00%] ··· suite.time_a   1.5μs",
        "[ 50.00%] ··· suite.time_a   -1.5±0.5μs",
        "[ 50.00%] ··· suite.time_a   1e3±0.5μs",
        "[ 50.00%] ··· suite.time_a   1.2.3±0.5μs",
        "[ 50.00%] ··· suite.time_a   .±0.5μs",
        "[ 50.00%] ··· suite.time_a   failed",
        "[ 50.00%] ··· suite.time_a   2/3 failed",
        "[ 50.00%] ··· suite.time_a   n/a",
        "[ 50.00%] ··· suite.time_a   1.5±0.5μs;...",
        "[ 50.00%] ···suite.time_a   1.5±0.5μs",
        "[ 50.00%]··· suite.time_a   1.5±0.5μs",
        "[ 50.00] ··· suite.time_a   1.5±0.5μs",
        "[ x%] ··· suite.time_a   1.5±0.5μs",
        "[ 1.2.3%] ··· suite.time_a   1.5±0.5μs",
        " [ 50.00%] ··· suite.time_a   1.5±0.5μs",
        "[ 50.00%] --- suite.time_a   1.5~0.5us",
        "[ 50.00%] ··· suite.time_a1.5±0.5μs",
        "              10    1.02±0.01μs",
        "· suite.time_a   1.5±0.5μs",
    ],
)
def test_lines_that_are_not_results(line: str) -> None:
    with pytest.raises(AdapterError, match="python_asv: no result line"):
        parse("python_asv", f"{line}\n{line}")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "python_asv: no result line"),
        ('{"benchmarks": []}', "python_asv: no result line"),
        ("[ 1%] ··· a 9" + "9" * 400 + "±1s", r"python_asv: line 1: inf s is too large"),
        ("\n[ 1%] ··· a 1±9" + "9" * 400 + "ms", r"python_asv: line 2: inf ms is too large"),
        (
            "[ 1%] ··· a 1e300±1s".replace("1e300", "1" + "0" * 300),
            r"python_asv: line 1: .* s is too large",
        ),
        (
            "[ 1%] ··· a " + "1" * 300 + "±" + "1" * 300 + "s",
            r"python_asv: line 1: .* is too large",
        ),
        ("[ 1%] ··· a\x00b 1±1s", "benchmark name 'a\\\\x00b' has a NUL character"),
        ("[ 1%] ··· a\udcffb 1±1s", "has a lone surrogate"),
        ("[ 1%] ··· " + "a" * 1025 + " 1±1s", "benchmark name must be 1-1024 characters"),
    ],
)
def test_unreadable_output_says_what(text: str, message: str) -> None:
    with pytest.raises(AdapterError, match=message):
        parse("python_asv", text)


def test_binary_garbage_is_refused() -> None:
    garbage = bytes(range(256)).decode("latin-1") * 40_000  # 10 MB
    with pytest.raises(AdapterError, match="python_asv: no result line"):
        parse("python_asv", garbage)


@pytest.mark.parametrize(
    "line",
    [
        "[" + " " * 1_000_000 + "1" * 1_000_000,
        "[ 1%] " + "·" * 2_000_000,
        "[ 1%] ··· a " + "1" * 1_000_000 + "±" + "2" * 1_000_000,
        "[ 1%] ··· a" + "\t" * 2_000_000,
        "[ 1%] ··· a " + " \t" * 1_000_000,
    ],
)
def test_long_lines_that_backtracking_would_choke_on(line: str) -> None:
    with pytest.raises(AdapterError, match="python_asv: no result line"):
        parse("python_asv", "\n".join([line] * 5))


def test_a_huge_output_is_read_whole() -> None:
    result = "[ 50.00%] ··· suite.time_{}                          11.2±0.01μs"
    log = "[ 50.00%] ···· " + "stderr of a benchmark " * 20
    lines = (f"{result.format(i)}\n{log}\n{log}" for i in range(20_000))
    text = "\n".join(lines)
    assert len(text) > 10_000_000
    found = parse("python_asv", text)
    assert len(found) == 20_000
    assert found[-1] == Measurement("suite.time_19999", "latency", 11_200, 11_190, 11_210)
