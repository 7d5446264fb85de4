"""rust_criterion: Criterion's ``time: [lower estimate upper]`` lines -> latency in ns."""

from __future__ import annotations

import pytest

from benchrunner.adapters import AdapterError, Measurement, Settings, parse
from tests.unit.adapter_samples import assert_measurements, sample


def latency(name: str, value: float, lower: float, upper: float) -> Measurement:
    return Measurement(name, "latency", value, lower, upper)


SAMPLES = {
    "many.txt": [
        latency("fnv", 4.2, 4.1, 4.35),
        latency("siphash", 12.75, 12.5, 13.0),
        latency("hash a whole page of text", 1_500, 1_250, 1_750),
        latency("digest: name with spaces", 2_500_000, 2_000_000, 3_000_000),
        latency("sizes/copy/4096", 0.5, 0.25, 0.75),
        latency("whole_file", 2_000_000_000, 1_500_000_000, 2_500_000_000),
        latency("greek_mu", 2_000, 1_000, 3_000),
        latency("ascii_us", 5_000_000, 4_000_000, 6_000_000),
    ],
    "failed.txt": [latency("render/small", 2_500, 2_400, 2_600)],
}


@pytest.mark.parametrize("name", SAMPLES)
def test_sample(name: str) -> None:
    text = sample("rust_criterion", name)
    found = parse("rust_criterion", text)
    assert_measurements(found, SAMPLES[name])
    assert parse("rust_criterion", text, Settings(average="mean")) == found
    assert parse("rust", text) == found
    assert parse("magic", text) == found


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # The name on a line of its own is the whole line before, blanks and all.
        (
            "  indented name \n        time:   [1 ns 2 ns 3 ns]\n",
            [latency("  indented name ", 2, 1, 3)],
        ),
        # Tabs separate as spaces do; thousands separators are dropped.
        ("tabbed\ttime:\t[1,000 ns\t2,000 ns\t3,000 ns]\n", [latency("tabbed", 2e3, 1e3, 3e3)]),
        # The last "time:" of the line is the result's; the name may hold another.
        ("time: wall   time:   [1 ms 2 ms 3 ms]\n", [latency("time: wall", 2e6, 1e6, 3e6)]),
        # The same benchmark twice keeps the later result.
        (
            "a  time: [1 ns 2 ns 3 ns]\nb  time: [4 ns 5 ns 6 ns]\na  time: [7 ns 8 ns 9 ns]\n",
            [latency("a", 8, 7, 9), latency("b", 5, 4, 6)],
        ),
    ],
)
def test_line_shapes(text: str, expected: list[Measurement]) -> None:
    assert_measurements(parse("rust_criterion", text), expected)


@pytest.mark.parametrize(
    "text",
    [
        # A time line with no line before it has no name.
        "        time:   [1 ns 2 ns 3 ns]\n",
        "\n        time:   [1 ns 2 ns 3 ns]\n",
        "fnv     time:   [1 ns 2 ns 3 ns] extra\n",
        "fnv     time:   [1 ns 2 ns]\n",
        "fnv     time:   [1 ns 2 ns 3 ks]\n",
        "fnv     time:   [1.2.3 ns 2 ns 3 ns]\n",
        "fnvtime:   [1 ns 2 ns 3 ns]\n",
        "                 change: [-1.0% +0.5% +2.0%] (p = 0.81 > 0.05)\n",
        # Criterion 0.5 prints changes with U+2212 MINUS SIGN.
        "        time:   [−3.0% +1.0% +5.0%] (p = 0.70 > 0.05)\n",  # noqa: RUF001
        "Benchmarking fnv: Analyzing\n",
    ],
)
def test_lines_bencher_passes_over(text: str) -> None:
    with pytest.raises(AdapterError, match=r"^rust_criterion: no '<name>  time:"):
        parse("rust_criterion", text)


@pytest.mark.parametrize(
    ("text", "settings", "message"),
    [
        (
            "fnv  time: [1 ns 2 ns 3 ns]\n",
            Settings(average="median"),
            "^rust_criterion: the harness prints only a mean .* settings.average 'median'",
        ),
        (
            "fnv  time: [1 ns 2" + "0" * 400 + " ns 3 ns]\n",
            Settings(),
            "^rust_criterion: line 1 must be finite",
        ),
        (
            "n" * 1025 + "\n        time:   [1 ns 2 ns 3 ns]\n",
            Settings(),
            "^rust_criterion: benchmark name must be 1-1024 characters",
        ),
    ],
)
def test_unreadable_output_says_why(text: str, settings: Settings, message: str) -> None:
    with pytest.raises(AdapterError, match=message):
        parse("rust_criterion", text, settings)
