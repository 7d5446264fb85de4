from __future__ import annotations

import json
import math

import pytest

from benchrunner.adapters import AdapterError, Average, Measurement, Settings, parse
from tests.unit.approx_measurements import assert_measurements, sample

SUITE = sample("python_pyperf", "runner_suite.json")
ONE_VALUE = sample("python_pyperf", "timeit_one_value.json")
WITH_MEMORY = sample("python_pyperf", "with_memory.json")

# json_dumps: values 1, 2, 3, 4 us over two runs (the calibration run and warmups add none):
# mean 2.5 us, sample stdev sqrt(5/3) us; median 2.5 us, deviations 1.5 0.5 0.5 1.5 -> MAD 1 us.
# json_loads: 0.5, 0.7, 0.6 ms: mean 0.6 ms, stdev 0.1 ms; median 0.6 ms, MAD 0.1 ms.
STDEV_DUMPS = 1_000 * math.sqrt(5 / 3)
CASES = [
    (
        SUITE,
        None,
        [
            Measurement("json_dumps", "latency", 2_500, 2_500 - STDEV_DUMPS, 2_500 + STDEV_DUMPS),
            Measurement("json_loads", "latency", 600_000, 500_000, 700_000),
        ],
    ),
    (
        SUITE,
        "mean",
        [
            Measurement("json_dumps", "latency", 2_500, 2_500 - STDEV_DUMPS, 2_500 + STDEV_DUMPS),
            Measurement("json_loads", "latency", 600_000, 500_000, 700_000),
        ],
    ),
    (
        SUITE,
        "median",
        [
            Measurement("json_dumps", "latency", 2_500, 1_500, 3_500),
            Measurement("json_loads", "latency", 600_000, 500_000, 700_000),
        ],
    ),
    # One value: no spread. The name comes from the suite's metadata.
    (ONE_VALUE, None, [Measurement("timeit", "latency", 250)]),
    (ONE_VALUE, "median", [Measurement("timeit", "latency", 250)]),
    # The byte-valued benchmark is skipped; query_index: 4, 2, 3 ms -> 3 ms +- 1 ms both ways.
    (WITH_MEMORY, None, [Measurement("query_index", "latency", 3e6, 2e6, 4e6)]),
    (WITH_MEMORY, "median", [Measurement("query_index", "latency", 3e6, 2e6, 4e6)]),
]


@pytest.mark.parametrize(("text", "average", "expected"), CASES)
def test_result_file_gives_latency_per_benchmark(
    text: str, average: Average | None, expected: list[Measurement]
) -> None:
    assert_measurements(parse("python_pyperf", text, Settings(average=average)), expected)


@pytest.mark.parametrize("text", [SUITE, ONE_VALUE, WITH_MEMORY])
def test_language_and_magic_read_it_alike(text: str) -> None:
    named = parse("python_pyperf", text)
    assert parse("python", text) == named
    assert parse("magic", text) == named


def _suite(change: str, value: object) -> str:
    """SUITE with one field replaced: ``change`` is a path such as ``benchmarks.1.runs``."""
    document = json.loads(SUITE)
    *parents, last = change.split(".")
    target = document
    for key in parents:
        target = target[int(key)] if key.isdigit() else target[key]
    target[int(last) if last.isdigit() else last] = value
    return json.dumps(document)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "python_pyperf: not valid JSON"),
        ("Mean +- std dev: 228 ns +- 3 ns", "python_pyperf: not valid JSON"),
        ('"1.0"', "python_pyperf: the document must be a JSON object"),
        ('{"benchmarks": []}', "python_pyperf: version is missing"),
        (_suite("version", 6), "python_pyperf: version is 6; pyperf's format '1.0' is read"),
        ('{"version": "1.0"}', "python_pyperf: benchmarks is missing"),
        ('{"version": "1.0", "benchmarks": []}', "benchmarks is empty"),
        (_suite("metadata", []), "python_pyperf: metadata must be a JSON object"),
        (_suite("benchmarks.1", "x"), r"benchmarks\[1\] must be a JSON object"),
        (_suite("benchmarks.1.metadata", 3), r"benchmarks\[1\]\.metadata must be a JSON object"),
        (_suite("benchmarks.1.runs", {}), r"benchmarks\[1\]\.runs must be a JSON array"),
        (_suite("benchmarks.1.runs", []), r"benchmarks\[1\] has no values"),
        (
            _suite("benchmarks.0.runs.0.metadata", None),
            r"benchmarks\[0\]\.runs\[0\]\.metadata must be",
        ),
        (
            _suite("benchmarks.1.runs.0.values", 5),
            r"benchmarks\[1\]\.runs\[0\]\.values must be a JSON array",
        ),
        (
            _suite("benchmarks.1.runs.0.values.2", "6e-4"),
            r"runs\[0\]\.values\[2\] must be a number, got '6e-4'",
        ),
        (
            _suite("benchmarks.1.runs.0.values.2", None),
            r"runs\[0\]\.values\[2\] must be a number, got None",
        ),
        (_suite("benchmarks.1.runs.0.values.2", float("inf")), r"values\[2\] must be finite"),
        (_suite("benchmarks.1.runs.0.values.2", 10**400), r"values\[2\] is too large for a float"),
        (_suite("benchmarks.1.runs.0.values", [1e300]), r"benchmarks\[1\]: 1e\+300 s is too large"),
        (
            _suite("benchmarks.1.runs.0.values.2", 1e300),
            r"benchmarks\[1\]: its values are too large to average",
        ),
        (
            _suite("benchmarks.1.runs.0.values", [1e308, 1e308]),
            r"benchmarks\[1\]: its values are too large",
        ),
        (
            _suite("benchmarks.1.runs.0.values", [1e299, 1.7e299]),
            r"benchmarks\[1\]: its values are too large",
        ),
        (_suite("benchmarks.1.metadata", {}), r"benchmarks\[1\] has no 'name' metadata"),
        (_suite("benchmarks.1.metadata.name", 7), r"benchmarks\[1\] has no 'name' metadata"),
        (
            _suite("benchmarks.0.runs.1.metadata.name", "other"),
            r"benchmarks\[0\]: its runs disagree on metadata 'name'",
        ),
        (_suite("benchmarks.1.metadata.name", ""), "benchmark name must be 1-1024 characters"),
        (_suite("benchmarks.1.metadata.name", "a\x00"), "has a NUL character"),
        (_suite("benchmarks.1.metadata.name", "a\ud800"), "has a lone surrogate"),
        (_suite("metadata.unit", "byte"), r"no benchmark is measured in seconds \(units: 'byte'\)"),
        ("[" * 100_000 + "]" * 100_000, "python_pyperf: not valid JSON: nested too deeply"),
        (
            '{"version": "1.0", "benchmarks": [{"runs": [{"values": [1' + "0" * 5000 + "]}]}]}",
            "not valid JSON",
        ),
    ],
)
def test_unreadable_file_says_what(text: str, message: str) -> None:
    with pytest.raises(AdapterError, match=message):
        parse("python_pyperf", text)


def test_binary_garbage_is_refused() -> None:
    garbage = bytes(range(256)).decode("latin-1") * 40_000  # 10 MB
    with pytest.raises(AdapterError, match="python_pyperf: not valid JSON"):
        parse("python_pyperf", garbage)


def test_a_huge_file_is_read_whole() -> None:
    week = ", ".join(repr((1 + day / 3) * 1e-6) for day in range(7))  # 1 to 3 us
    values = ", ".join([week] * 90_000)
    runs = f'[{{"values": [{values}]}}]'
    text = (
        f'{{"version": "1.0", "metadata": {{"name": "big"}}, "benchmarks": [{{"runs": {runs}}}]}}'
    )
    assert len(text) > 10_000_000
    [found] = parse("python_pyperf", text, Settings(average="median"))
    assert found.benchmark == "big"
    assert found.value == pytest.approx(2_000)
