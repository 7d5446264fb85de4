from __future__ import annotations

import json

import pytest

from benchrunner.adapters import AdapterError, Average, Measurement, Settings, parse
from tests.unit.approx_measurements import assert_measurements, sample

TEXT = sample("python_pytest", "two_tests.json")
TOKENIZE = "benchmarks/test_text.py::test_tokenize"
SPLIT = "benchmarks/test_text.py::test_split[1024]"


@pytest.mark.parametrize(
    ("average", "expected"),
    [
        # mean 125 us +- stddev 5 us; mean 2.5 ms +- stddev 0.3 ms
        (
            None,
            [
                Measurement(TOKENIZE, "latency", 125_000, 120_000, 130_000),
                Measurement(SPLIT, "latency", 2_500_000, 2_200_000, 2_800_000),
            ],
        ),
        (
            "mean",
            [
                Measurement(TOKENIZE, "latency", 125_000, 120_000, 130_000),
                Measurement(SPLIT, "latency", 2_500_000, 2_200_000, 2_800_000),
            ],
        ),
        # median 120 us +- the whole iqr 4 us; median 2.4 ms +- iqr 0.2 ms
        (
            "median",
            [
                Measurement(TOKENIZE, "latency", 120_000, 116_000, 124_000),
                Measurement(SPLIT, "latency", 2_400_000, 2_200_000, 2_600_000),
            ],
        ),
    ],
)
def test_export_gives_latency_per_test(
    average: Average | None, expected: list[Measurement]
) -> None:
    assert_measurements(parse("python_pytest", TEXT, Settings(average=average)), expected)


def test_language_and_magic_read_it_alike() -> None:
    named = parse("python_pytest", TEXT)
    assert parse("python", TEXT) == named
    assert parse("magic", TEXT) == named


def _export(**stats_changes: object) -> str:
    document = json.loads(TEXT)
    document["benchmarks"][1]["stats"].update(stats_changes)
    return json.dumps(document)


def _without(*keys: str) -> str:
    document = json.loads(TEXT)
    for key in keys:
        del document[key]
    return json.dumps(document)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "python_pytest: not valid JSON"),
        ("Name (time in ns)  Min  Max  Mean", "python_pytest: not valid JSON"),
        ("[]", "python_pytest: the document must be a JSON object"),
        (_without("machine_info"), "python_pytest: machine_info is missing"),
        (_without("commit_info"), "python_pytest: commit_info is missing"),
        (_without("benchmarks"), "python_pytest: benchmarks is missing"),
        (
            '{"machine_info": {}, "commit_info": {}, "benchmarks": {}}',
            "benchmarks must be a JSON array",
        ),
        ('{"machine_info": {}, "commit_info": {}, "benchmarks": []}', "benchmarks is empty"),
        ('{"machine_info": {}, "commit_info": {}, "benchmarks": [7]}', r"benchmarks\[0\] must be"),
        (
            _export(mean=None),
            r"python_pytest: benchmarks\[1\]\.stats\.mean must be a number, got None",
        ),
        (_export(iqr="0.1"), r"benchmarks\[1\]\.stats\.iqr must be a number, got '0.1'"),
        (_export(stddev=True), r"benchmarks\[1\]\.stats\.stddev must be a number, got True"),
        (
            _export(median=list(range(10**5))),
            r"stats\.median must be a number, got \[0, 1, 2, 3, 4, 5, \.\.\.\]$",
        ),
        (_export(mean=float("nan")), r"benchmarks\[1\]\.stats\.mean must be finite"),
        (_export(mean=10**400), r"benchmarks\[1\]\.stats\.mean is too large for a float"),
        (
            _export(mean=1e300),
            r"benchmarks\[1\]\.stats\.mean: 1e\+300 is too large for Bencher's decimal",
        ),
        (
            _export(mean=1e299, stddev=1e299),
            r"benchmarks\[1\]\.stats\.mean: 1e\+299 is too large for Bencher's decimal numbers",
        ),
        (TEXT.replace('"stddev": 0.0003', '"stddev": 1e999'), r"stats\.stddev must be finite"),
        (TEXT.replace('"stddev": 0.0003', '"stddev": 1' + "0" * 5000), "not valid JSON"),
        ("[" * 100_000 + "]" * 100_000, "python_pytest: not valid JSON: nested too deeply"),
        (TEXT.replace(SPLIT, "bench\\u0000"), "benchmark name 'bench\\\\x00' has a NUL character"),
        (TEXT.replace(SPLIT, "bench\\ud800"), "has a lone surrogate"),
        (TEXT.replace(SPLIT, ""), "benchmark name must be 1-1024 characters"),
        (TEXT.replace(f'"{SPLIT}"', "17"), r"benchmarks\[1\]\.fullname must be a string, got 17"),
    ],
)
def test_unreadable_export_says_what(text: str, message: str) -> None:
    with pytest.raises(AdapterError, match=message):
        parse("python_pytest", text)


def test_binary_garbage_and_huge_text_are_refused() -> None:
    garbage = bytes(range(256)).decode("latin-1") * 40_000  # 10 MB
    for text in (garbage, "x" * 10_000_000, TEXT[:-2] * 2):
        with pytest.raises(AdapterError, match="python_pytest: not valid JSON"):
            parse("python_pytest", text)


def test_a_huge_export_is_read_whole() -> None:
    document = json.loads(TEXT)
    entry = json.dumps({**document["benchmarks"][0], "fullname": "b.py::test[{}]"})
    infos = json.dumps({key: document[key] for key in ("machine_info", "commit_info")})
    head = infos.removesuffix("}") + ', "benchmarks": ['
    entries = ", ".join(entry.replace("{}", str(i)) for i in range(18_000))
    text = f"{head}{entries}]}}"
    assert len(text) > 10_000_000
    found = parse("python_pytest", text)
    assert len(found) == 18_000
    assert found[-1] == Measurement("b.py::test[17999]", "latency", 125_000, 120_000, 130_000)
