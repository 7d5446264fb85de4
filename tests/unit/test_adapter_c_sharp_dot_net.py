"""c_sharp_dot_net: BenchmarkDotNet's JSON export -> latency (and memory diagnoser counts)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchrunner.adapters import AdapterError, Average, Measurement, Settings, parse
from tests.unit.measurements_close import assert_measurements

SAMPLES = Path(__file__).parents[1] / "adapter_samples" / "c_sharp_dot_net"


def latency(name: str, value: float, spread: float) -> Measurement:
    return Measurement(name, "latency", value, value - spread, value + spread)


def memory(
    name: str, allocated: int, gen0: int, gen1: int, gen2: int, operations: int
) -> list[Measurement]:
    counts = (allocated, gen0, gen1, gen2, operations)
    slugs = ("allocated", "gen0-collects", "gen1-collects", "gen2-collects", "total-operations")
    return [Measurement(name, slug, count) for slug, count in zip(slugs, counts, strict=True)]


# Namespace.Method (Type and Parameters are not in the name); Method alone without a namespace.
PLAIN_MEAN = [  # Mean ∓ StandardDeviation
    latency("MyApp.Benchmarks.Concat", 125.5, 2.5),
    latency("MyApp.Benchmarks.Join", 2_048, 64),
    latency("NoNamespace", 10, 0.5),
    latency("Missing", 1_000_000, 25_000),
]
PLAIN_MEDIAN = [  # Median ∓ InterquartileRange
    latency("MyApp.Benchmarks.Concat", 124, 4),
    latency("MyApp.Benchmarks.Join", 2_000, 100),
    latency("NoNamespace", 9.75, 1),
    latency("Missing", 990_000, 50_000),
]
MEMORY_MEAN = [
    latency("MyApp.Benchmarks.NewList", 30.5, 1.5),
    *memory("MyApp.Benchmarks.NewList", 56, 95, 1, 0, 16_777_216),
    latency("MyApp.Benchmarks.Reuse", 4.25, 0.25),
    *memory("MyApp.Benchmarks.Reuse", 0, 0, 0, 0, 268_435_456),
]
MEMORY_MEDIAN = [
    latency("MyApp.Benchmarks.NewList", 30, 2),
    *MEMORY_MEAN[1:6],
    latency("MyApp.Benchmarks.Reuse", 4, 0.5),
    *MEMORY_MEAN[7:],
]


@pytest.mark.parametrize(
    ("sample", "average", "expected"),
    [
        ("plain.json", None, PLAIN_MEAN),
        ("plain.json", "mean", PLAIN_MEAN),
        ("plain.json", "median", PLAIN_MEDIAN),
        ("memory.json", None, MEMORY_MEAN),
        ("memory.json", "median", MEMORY_MEDIAN),
    ],
)
def test_sample(sample: str, average: Average | None, expected: list[Measurement]) -> None:
    text = (SAMPLES / sample).read_text()
    found = parse("c_sharp_dot_net", text, Settings(average=average))
    assert_measurements(found, expected)


def test_language_group_and_magic_read_it_the_same() -> None:
    text = (SAMPLES / "memory.json").read_text()
    assert parse("c_sharp", text) == parse("c_sharp_dot_net", text)
    assert parse("magic", text) == parse("c_sharp_dot_net", text)


def export(**fields: object) -> str:
    statistics: dict[str, object] = {"Mean": 2.0, "StandardDeviation": 1.0, "Median": 2.0}
    statistics["InterquartileRange"] = 1.0
    benchmark: dict[str, object] = {"Namespace": "N", "Method": "M", "Statistics": statistics}
    for key, value in fields.items():
        target = statistics if key in statistics else benchmark
        if value is None:
            del target[key]
        else:
            target[key] = value
    return json.dumps({"HostEnvironmentInfo": {}, "Benchmarks": [benchmark]})


def memory_fields(**fields: object) -> dict[str, object]:
    counts: dict[str, object] = {
        "Gen0Collections": 1,
        "Gen1Collections": 0,
        "Gen2Collections": 0,
        "TotalOperations": 10,
        "BytesAllocatedPerOperation": 8,
    }
    counts.update(fields)
    return {k: v for k, v in counts.items() if v is not None}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json", "c_sharp_dot_net: not valid JSON"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ("[]", "c_sharp_dot_net: the export must be a JSON object"),
        ('{"Benchmarks": []}', "c_sharp_dot_net: HostEnvironmentInfo is missing"),
        ('{"HostEnvironmentInfo": {}}', "c_sharp_dot_net: Benchmarks is missing"),
        ('{"HostEnvironmentInfo": {}, "Benchmarks": []}', "Benchmarks array is empty"),
        (export(Method=None), r"Benchmarks\[0\].Method is missing"),
        (export(Namespace=3), r"Benchmarks\[0\].Namespace must be a string"),
        (export(Namespace=""), r"Benchmarks\[0\].Namespace name must be 1-1024"),
        (export(Namespace="N" * 1024), "benchmark name must be 1-1024"),
        (export(Statistics=None), r"Benchmarks\[0\].Statistics is missing"),
        (export(Statistics=[]), r"Benchmarks\[0\].Statistics must be a JSON object"),
        (export(Median=None), r"Statistics.Median is missing"),
        (export(InterquartileRange="1"), r"Statistics.InterquartileRange must be a number"),
        (
            export(Mean=1e308, StandardDeviation=1e308),
            r"Statistics\.Mean: 1e\+308 is too large for Bencher's decimal numbers",
        ),
        (export(Memory=memory_fields(TotalOperations=None)), r"Memory.TotalOperations is missing"),
        (export(Memory=memory_fields(Gen0Collections=1.5)), r"Memory.Gen0Collections must be"),
        (export(Memory=memory_fields(Gen1Collections=-1)), r"Memory.Gen1Collections must be"),
        (export(Memory=[]), r"Benchmarks\[0\].Memory must be a JSON object"),
    ],
)
def test_errors_say_why(text: str, message: str) -> None:
    with pytest.raises(AdapterError, match=message):
        parse("c_sharp_dot_net", text)
