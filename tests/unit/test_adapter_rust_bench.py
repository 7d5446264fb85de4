"""rust_bench: libtest ``cargo bench`` output -> latency (median, +/- spread) in nanoseconds."""

from __future__ import annotations

import pytest

from benchrunner.adapters import AdapterError, Measurement, Settings, parse
from tests.unit.adapter_samples import assert_measurements, sample


def latency(name: str, value: float, lower: float, upper: float) -> Measurement:
    return Measurement(name, "latency", value, lower, upper)


SAMPLES = {
    "one.txt": [latency("parser::tokenize", 1250, 1210, 1290)],
    "many.txt": [
        latency("store::insert", 812, 800, 824),
        latency("store::lookup", 47, 44, 50),
        latency("store::scan_micro", 2_000, 1_000, 3_000),
        latency("store::scan_greek", 5_000, 3_000, 7_000),
        latency("store::scan_ascii", 7_000, 6_000, 8_000),
        latency("store::compact", 15_000_000, 11_000_000, 19_000_000),
        latency("store::rebuild", 3_000_000_000, 2_000_000_000, 4_000_000_000),
        latency("store::fast_path", 0.25, 0.2, 0.3),
    ],
    "fractional.txt": [
        latency("codec::bench::encode_large", 2_500_000.5, 2_375_000.25, 2_625_000.75),
        latency("codec::bench::decode_small", 640.75, 640.5, 641.0),
    ],
    "failed.txt": [
        latency("queue::push", 900, 800, 1000),
        latency("queue::drain", 4000, 3750, 4250),
    ],
    "multi_target.txt": [
        latency("store::insert", 800, 790, 810),
        latency("read_file", 9000, 8700, 9300),
        latency("write_file", 12000, 11400, 12600),
    ],
    "crlf.txt": [latency("crlf::bench", 100, 95, 105)],
}


@pytest.mark.parametrize("name", SAMPLES)
def test_sample(name: str) -> None:
    text = sample("rust_bench", name)
    found = parse("rust_bench", text)
    assert_measurements(found, SAMPLES[name])
    assert parse("rust_bench", text, Settings(average="median")) == found
    assert parse("rust", text) == found
    assert parse("magic", text) == found


def test_a_benchmark_in_two_targets_keeps_its_last_result() -> None:
    text = (
        "test shared::name ... bench:         10 ns/iter (+/- 1)\n"
        "test other ... bench:                20 ns/iter (+/- 2)\n"
        "test shared::name ... bench:         30 ns/iter (+/- 3)\n"
    )
    assert parse("rust_bench", text) == [
        latency("shared::name", 30, 27, 33),
        latency("other", 20, 18, 22),
    ]


@pytest.mark.parametrize(
    "line",
    [
        " test lead::space ... bench: 5 ns/iter (+/- 1)",
        "test trailing ... bench: 5 ns/iter (+/- 1) extra",
        "test no_spread ... bench: 5 ns/iter",
        "test bad_unit ... bench: 5 ks/iter (+/- 1)",
        "test two_dots ... bench: 1.2.3 ns/iter (+/- 1)",
        "test signed ... bench: -5 ns/iter (+/- 1)",
        "test tab\tbefore... bench: 5 ns/iter (+/- 1)",
        "test ignored_one ... ignored",
        "test failed_one ... FAILED",
    ],
)
def test_lines_bencher_passes_over(line: str) -> None:
    with pytest.raises(AdapterError, match=r"^rust_bench: no 'test <name> \.\.\. bench:"):
        parse("rust_bench", line + "\n")


@pytest.mark.parametrize(
    ("text", "settings", "message"),
    [
        (
            "running 0 tests\n\ntest result: ok. 0 passed; 0 failed; 0 ignored; 0 measured\n",
            Settings(),
            "^rust_bench: no 'test <name> ... bench: <n> ns/iter' line found$",
        ),
        ("", Settings(), "^rust_bench: no 'test <name>"),
        (
            "test a ... bench: 5 ns/iter (+/- 1)\n",
            Settings(average="mean"),
            "^rust_bench: the harness prints only a median .* settings.average 'mean'",
        ),
        (
            "test a ... bench: 1" + "0" * 400 + " ns/iter (+/- 1)\n",
            Settings(),
            "^rust_bench: line 1 must be finite",
        ),
        (
            "test " + "n" * 1025 + " ... bench: 5 ns/iter (+/- 1)\n",
            Settings(),
            "^rust_bench: benchmark name must be 1-1024 characters",
        ),
        (
            "test a\x00b ... bench: 5 ns/iter (+/- 1)\n",
            Settings(),
            "^rust_bench: benchmark name .* has a NUL character",
        ),
    ],
)
def test_unreadable_output_says_why(text: str, settings: Settings, message: str) -> None:
    with pytest.raises(AdapterError, match=message):
        parse("rust_bench", text, settings)
