from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchrunner.adapters import AdapterError, Measurement, could_not_read, parse, unreadable


def test_bmf_with_bounds() -> None:
    text = json.dumps(
        {
            "sort": {"latency": {"value": 12.5, "lower_value": 11, "upper_value": 14}},
            "hash": {"throughput": {"value": 3}},
        }
    )
    assert parse("json", text) == [
        Measurement("sort", "latency", 12.5, 11.0, 14.0),
        Measurement("hash", "throughput", 3.0, None, None),
    ]
    assert parse("magic", text) == parse("json", text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json", "not valid JSON"),
        ("[]", "non-empty JSON object"),
        ("{}", "non-empty JSON object"),
        ('{"b": 1}', "must map measures"),
        ('{"b": {"m": {"val": 1}}}', "must be an object with a 'value'"),
        ('{"b": {"m": {"value": "1"}}}', "must be a number"),
        ('{"b": {"m": {"value": true}}}', "must be a number"),
        ('{"b": {"m": {"value": 1, "lower_value": "x"}}}', "lower_value must be a number"),
        ('{"b": {"m": {"value": 1e999}}}', "must be finite"),
        ('{"b": {"m": {"value": 1' + "0" * 400 + "}}}", "too large for a float"),
        ('{"b": {"m": {"value": 1' + "0" * 5000 + "}}}", "not valid JSON"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ('{"b\\u0000": {"m": {"value": 1}}}', "benchmark name .* has a NUL character"),
        ('{"b": {"m\\ud800": {"value": 1}}}', "measure name .* has a lone surrogate"),
        ('{"b": {"m\\u0000": {"value": 1}}}', "measure name .* has a NUL character"),
        ('{"b\\ud800": {"m": {"value": 1}}}', "benchmark name .* has a lone surrogate"),
        ('{"": {"m": {"value": 1}}}', "benchmark name must be 1-1024 characters"),
    ],
)
def test_unparsable_output_says_why(text: str, message: str) -> None:
    with pytest.raises(AdapterError, match=message):
        parse("json", text)


def test_unknown_adapter() -> None:
    with pytest.raises(AdapterError, match="unknown adapter 'cobol'"):
        parse("cobol", "{}")


def test_names_are_read_whole_and_the_last_duplicate_wins() -> None:
    # An ignore suffix is the store's to strip (reports.without_ignore_suffix), not dropped here.
    text = json.dumps(
        {
            "sort": {"latency": {"value": 1}},
            "slow-bencher-ignore": {"latency": {"value": 2}},
        }
    )
    assert parse("json", text) == [
        Measurement("sort", "latency", 1.0),
        Measurement("slow-bencher-ignore", "latency", 2.0),
    ]
    lines = "\n".join(
        f"[ 50.00%] ··· benchmarks.Suite.time_x{' ' * 20}{value}±0.01μs" for value in (1, 2)
    )
    assert parse("python_asv", lines) == [
        Measurement("benchmarks.Suite.time_x", "latency", 2000.0, 1990.0, 2010.0)
    ]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('{"b\\ud800": {"m": {"value": 1}}}', "lone surrogate"),
        ('{"b": {"m": {"value": "1"}}}', "must be a number"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ],
)
def test_magic_says_what_was_wrong_with_json(text: str, reason: str) -> None:
    with pytest.raises(AdapterError, match=f"as Bencher Metric Format: .*{reason}"):
        parse("magic", text)


GUNGRAUN = Path(__file__).parent.parent / "adapter_samples" / "rust_gungraun"


def test_bencher_s_gungraun_variants_read_their_own_part_of_the_output() -> None:
    console, summaries = ((GUNGRAUN / name).read_text() for name in ("tools.txt", "json_lines.txt"))
    both = console + summaries
    names = {
        adapter: {m.benchmark for m in parse(adapter, both)}
        for adapter in ("rust_gungraun", "rust_gungraun_json", "rust_gungraun_stdout")
    }
    assert names["rust_gungraun"] == names["rust_gungraun_json"]  # summaries first, as Bencher
    assert names["rust_gungraun_stdout"] == {"alloc_bench::grow_group::grow_vec cap:1024"}
    assert parse("rust_gungraun_stdout", both) == parse("rust_gungraun_stdout", console)
    with pytest.raises(AdapterError, match="no JSON summary"):
        parse("rust_gungraun_json", console)


def test_json_v0_is_bencher_metric_format() -> None:
    text = json.dumps({"sort": {"latency": {"value": 1.5}}})
    assert parse("json_v0", text) == parse("json", text)


@pytest.mark.parametrize(
    ("adapter", "text", "message"),
    [
        (
            "rust_criterion",
            "all tests passed\n",
            "adapter rust_criterion could not read results[0]: no '<name>  time:  [<lower> "
            "<estimate> <upper>]' line found",
        ),
        (
            "magic",
            "all tests passed\n",
            "adapter magic could not read results[0]: no harness found benchmark results",
        ),
        (
            "cpp",
            "all tests passed\n",
            "adapter cpp could not read results[0]: no harness found benchmark results in the "
            "output (tried cpp_catch2, cpp_google)",
        ),
        (
            "go_bench",
            "BenchmarkA\x00 1 3 ns/op\n",
            "adapter go_bench could not read results[0]: line 1: benchmark name",
        ),
    ],
)
def test_unreadable_output_is_named_after_its_adapter(
    adapter: str, text: str, message: str
) -> None:
    with pytest.raises(AdapterError) as raised:
        parse(adapter, text)
    assert could_not_read(adapter, "results[0]", raised.value).startswith(message)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("bench  time: [1 ns 2 ns 3 ns]\x00\n", "contains a NUL character (at character 29)"),
        ('{"a": 1}\ud800', "is not UTF-8 text (a lone surrogate at character 8)"),
        ('{"a": 1}\ufffd', None),
    ],
)
def test_text_that_is_not_plain_text_says_where(text: str, problem: str | None) -> None:
    assert unreadable(text) == problem
