"""js_vitest: `vitest bench --outputJson` report -> latency and throughput per benchmark."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchrunner.adapters import AdapterError, Average, Measurement, Settings, parse
from tests.unit.measurements_close import assert_measurements

SAMPLES = Path(__file__).parents[1] / "adapter_samples" / "js_vitest"
SMALL = "bench/parse.bench.ts > parser > json > small document"
LARGE = "bench/parse.bench.ts > parser > json > large document"
TOP = "bench/parse.bench.ts > top level"
SORT = "bench/sort.bench.ts > sort > numbers > 1000"

# Throughput is hz ∓ hz * rme / 100 whatever the average.
THROUGHPUT = {
    SMALL: (50_000, 48_750, 51_250),
    LARGE: (125, 120, 130),
    TOP: (2_000, 1_800, 2_200),
    SORT: (800, 640, 960),
}
# Mean (ms -> ns) ∓ sd; median (ms -> ns) alone.
MEAN_LATENCY = {
    SMALL: (20_000, 16_000, 24_000),
    LARGE: (8_000_000, 6_500_000, 9_500_000),
    TOP: (500_000, 375_000, 625_000),
    SORT: (1_250_000, 1_000_000, 1_500_000),
}
MEDIAN_LATENCY = {
    SMALL: (18_500, None, None),
    LARGE: (7_500_000, None, None),
    TOP: (250_000, None, None),
    SORT: (1_000_000, None, None),
}


def expected(latency: dict[str, tuple[float, float | None, float | None]]) -> list[Measurement]:
    found: list[Measurement] = []
    for name in (SMALL, LARGE, TOP, SORT):
        found.append(Measurement(name, "latency", *latency[name]))
        found.append(Measurement(name, "throughput", *THROUGHPUT[name]))
    return found


@pytest.mark.parametrize(
    ("average", "latency"),
    [(None, MEAN_LATENCY), ("mean", MEAN_LATENCY), ("median", MEDIAN_LATENCY)],
)
def test_sample(
    average: Average | None, latency: dict[str, tuple[float, float | None, float | None]]
) -> None:
    text = (SAMPLES / "report.json").read_text()
    found = parse("js_vitest", text, Settings(average=average))
    assert_measurements(found, expected(latency))


def test_language_group_and_magic_read_it_the_same() -> None:
    text = (SAMPLES / "report.json").read_text()
    assert parse("js", text) == parse("js_vitest", text)
    assert parse("magic", text) == parse("js_vitest", text)


def report(full_name: str, **benchmark: object) -> str:
    fields: dict[str, object] = {"name": "b", "hz": 10, "mean": 100, "median": 90, "sd": 5}
    fields["rme"] = 1
    fields.update(benchmark)
    fields = {k: v for k, v in fields.items() if v is not None}
    group = {"fullName": full_name, "benchmarks": [fields]}
    return json.dumps({"files": [{"filepath": "/x.bench.ts", "groups": [group]}]})


@pytest.mark.parametrize(
    ("full_name", "name"),
    [
        ("f.bench.ts > g", "f.bench.ts > g > b"),
        ("", "b"),  # no group name: the benchmark's own
        ("g" * 1021, "b"),  # joined would be 1025 characters: the benchmark's own
        ("g" * 1020, "g" * 1020 + " > b"),
    ],
)
def test_names(full_name: str, name: str) -> None:
    assert {m.benchmark for m in parse("js_vitest", report(full_name))} == {name}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json", "js_vitest: not valid JSON"),
        ("[" * 100_000 + "]" * 100_000, "js_vitest: not valid JSON: nested too deeply"),
        ("[]", "js_vitest: the report must be a JSON object"),
        ("{}", "js_vitest: files is missing"),
        ('{"files": {}}', "js_vitest: files must be a JSON array"),
        ('{"files": []}', "js_vitest: the report has no benchmark"),
        ('{"files": [{"groups": []}]}', "js_vitest: the report has no benchmark"),
        ('{"files": [{}]}', r"js_vitest: files\[0\].groups is missing"),
        ('{"files": [{"groups": [{"benchmarks": []}]}]}', "fullName is missing"),
        ('{"files": [{"groups": [{"fullName": 1, "benchmarks": []}]}]}', "fullName must be"),
        (report("g", hz=None), r"files\[0\].groups\[0\].benchmarks\[0\].hz is missing"),
        (report("g", median=None), r"benchmarks\[0\].median is missing"),
        (report("g", sd="1"), r"benchmarks\[0\].sd must be a number"),
        (report("g", rme=True), r"benchmarks\[0\].rme must be a number"),
        (report("g", mean=1e999), r"benchmarks\[0\].mean must be finite"),
        (report("g", mean=1e303), "latency is too large"),
        (report("g", name=""), "benchmark name must be 1-1024"),
        (report("g", name="\x00"), "NUL"),
        (report("g", name=7), r"benchmarks\[0\].name must be a string"),
    ],
)
def test_errors_say_why(text: str, message: str) -> None:
    with pytest.raises(AdapterError, match=message):
        parse("js_vitest", text)
