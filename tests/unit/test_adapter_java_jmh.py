"""java_jmh: JMH's `-rf json` result file -> latency or throughput by score unit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchrunner.adapters import AdapterError, Average, Measurement, Settings, java_jmh, parse
from tests.unit.measurements_close import assert_measurements

SAMPLES = Path(__file__).parents[1] / "adapter_samples" / "java_jmh"
BENCH = "org.example.bench."

# score and scoreConfidence, converted: ops/ms * 1e3, ops/us * 1e6 -> ops/s; us/op * 1e3,
# ms/op * 1e6, s/op * 1e9 -> ns. Params are not in the name: parseInt appears twice.
MODES = [
    Measurement(BENCH + "ParseBench.parseInt", "throughput", 12_500_000, 12_250_000, 12_750_000),
    Measurement(BENCH + "ParseBench.parseInt", "throughput", 9_000_000, 8_500_000, 9_500_000),
    Measurement(BENCH + "ParseBench.parseLong", "throughput", 4_200_500, 4_100_500, 4_300_500),
    Measurement(BENCH + "ParseBench.parseHex", "throughput", 3_500_000, 3_250_000, 3_750_000),
    Measurement(BENCH + "ParseBench.flaky", "throughput", 80, -40, 200),
    Measurement(BENCH + "HashBench.sha256", "latency", 812.25, 800, 824.5),
    Measurement(BENCH + "HashBench.md5", "latency", 1_500, 1_250, 1_750),
    Measurement(BENCH + "IoBench.readSmallFile", "latency", 750_000, 500_000, 1_000_000),
    Measurement(
        BENCH + "StartupBench.coldStart", "latency", 2_500_000_000, 2_000_000_000, 3_000_000_000
    ),
]


@pytest.mark.parametrize("average", [None, "mean"])
def test_every_mode_and_unit(average: Average | None) -> None:
    text = (SAMPLES / "modes.json").read_text()
    found = java_jmh.parse(text, Settings(average=average))
    assert_measurements(found, MODES)
    # A report keeps one measurement per benchmark and measure, the last, as Bencher's map does.
    assert_measurements(parse("java_jmh", text, Settings(average=average)), MODES[1:])


def test_language_group_and_magic_read_it_the_same() -> None:
    text = (SAMPLES / "modes.json").read_text()
    assert parse("java", text) == parse("java_jmh", text)
    assert parse("magic", text) == parse("java_jmh", text)


def result(unit: str = "ns/op", **fields: object) -> str:
    metric: dict[str, object] = {"score": 2.0, "scoreError": 1.0, "scoreConfidence": [1.0, 3.0]}
    metric["scoreUnit"] = unit
    run: dict[str, object] = {"benchmark": "a.B.c", "mode": "avgt", "primaryMetric": metric}
    run["secondaryMetrics"] = {}
    for key, value in fields.items():
        target = metric if key in ("score", "scoreConfidence") else run
        if value is None:
            del target[key]
        else:
            target[key] = value
    return json.dumps([run])


@pytest.mark.parametrize(
    ("unit", "measure", "values"),
    [
        ("ps/op", "latency", (0.002, 0.001, 0.003)),
        ("ns/op", "latency", (2, 1, 3)),
        ("µs/op", "latency", (2_000, 1_000, 3_000)),
        ("μs/op", "latency", (2_000, 1_000, 3_000)),
        ("ops/s", "throughput", (2, 1, 3)),
        ("ops/ns", "throughput", (2e9, 1e9, 3e9)),
        ("ops/ps", "throughput", (2e12, 1e12, 3e12)),
    ],
)
def test_units(unit: str, measure: str, values: tuple[float, float, float]) -> None:
    assert_measurements(parse("java_jmh", result(unit)), [Measurement("a.B.c", measure, *values)])


@pytest.mark.parametrize(
    ("text", "settings", "message"),
    [
        (result(), Settings("median"), "java_jmh: JMH reports no median"),
        ("not json", Settings(), "java_jmh: not valid JSON"),
        ("[" * 100_000 + "]" * 100_000, Settings(), "nested too deeply"),
        ("{}", Settings(), "java_jmh: the result file must be a JSON array"),
        ("[]", Settings(), "java_jmh: the result file is an empty array"),
        ("[1]", Settings(), r"java_jmh: \[0\] must be a JSON object"),
        (result(benchmark=None), Settings(), r"\[0\].benchmark is missing"),
        (result(benchmark=""), Settings(), "benchmark name must be 1-1024"),
        (result(secondaryMetrics=None), Settings(), r"\[0\].secondaryMetrics is missing"),
        (result(primaryMetric=None), Settings(), r"\[0\].primaryMetric is missing"),
        (result(score="NaN"), Settings(), r"\[0\].primaryMetric.score must be a number"),
        (result(score=None), Settings(), r"\[0\].primaryMetric.score is missing"),
        (result(scoreConfidence=None), Settings(), "scoreConfidence is missing"),
        (result(scoreConfidence=[1, 2, 3]), Settings(), "must be \\[lower, upper\\]"),
        (
            result(scoreConfidence=["NaN", "NaN"]),
            Settings(),
            r"scoreConfidence\[0\] must be a number",
        ),
        (result("ops/min"), Settings(), "'ops/min' has a time unit other than"),
        (result("min/op"), Settings(), "'min/op' has a time unit other than"),
        (result("B/op"), Settings(), "'B/op' has a time unit other than"),
        (result("ms"), Settings(), "'ms' is neither '<time>/op' nor 'ops/<time>'"),
        (
            result("ops/ps", score=1e300),
            Settings(),
            r"primaryMetric\.score: 1e\+300 is too large for Bencher's decimal numbers",
        ),
        (
            result("s/op", score=1e300),
            Settings(),
            r"primaryMetric\.score: 1e\+300 is too large for Bencher's decimal numbers",
        ),
    ],
)
def test_errors_say_why(text: str, settings: Settings, message: str) -> None:
    with pytest.raises(AdapterError, match=message):
        parse("java_jmh", text, settings)
