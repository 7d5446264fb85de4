"""Hostile output for rust_bench, rust_criterion, rust_iai, rust_gungraun and
dart_benchmark_harness: a clear AdapterError, never a crash or a hang (each input is ~10 MB,
which quadratic parsing would not finish), and no adapter reads another harness's output."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from benchrunner.adapters import AdapterError, parse
from tests.unit.adapter_samples import SAMPLES, sample

ADAPTERS = ("rust_bench", "rust_criterion", "rust_iai", "rust_gungraun", "dart_benchmark_harness")
TEN_MB = 10 * 1024 * 1024


def _garbage() -> str:
    noise = random.Random(9).randbytes(TEN_MB)
    return noise.decode("utf-8", errors="surrogateescape")


HOSTILE: dict[str, Callable[[], str]] = {
    # Built when a test runs, so that collecting the tests does not hold them all in memory.
    "spaces": lambda: " " * TEN_MB,
    "tabs after test": lambda: "test" + "\t" * TEN_MB + "x",
    "one long almost-bench line": lambda: "test a ... bench: " + "1" * TEN_MB + " ns/iter (+/- 1",
    "almost-bench lines": lambda: "test a ... bench: 1 ns/iter (+/- 1\n" * (TEN_MB // 36),
    "many time: on one line": lambda: " time: [1 ns 2 ns" * (TEN_MB // 17),
    "almost-criterion lines": lambda: "\n        time:   [1 ns 2 ns 3 ns\n" * (TEN_MB // 34),
    "iai names before almost-counts": lambda: (
        "b\n  Instructions: 1\n  L1 Accesses: x\n" * (TEN_MB // 36)
    ),
    "headers with no indented line": lambda: "a::b::c\n" * (TEN_MB // 8),
    "one header then a long name": lambda: "a::b::c" + "x" * TEN_MB + "\n  Instructions: 1|",
    "almost-metric lines": lambda: "a::b::c\n" + "  Instructions: 1|2 (+3%) [" * (TEN_MB // 27),
    "long banner": lambda: "a::b::c\n  " + "=" * TEN_MB,
    "ANSI escapes": lambda: "\x1b[" * (TEN_MB // 2),
    "many RunTime marks": lambda: "(RunTime):" * (TEN_MB // 10),
    "almost-dart lines": lambda: "a(RunTime): 1 us\n" * (TEN_MB // 17),
    "colons": lambda: ":" * TEN_MB,
    "garbage": lambda: _garbage(),
    "NUL": lambda: "\x00" * TEN_MB,
    "deep JSON": lambda: "[" * (TEN_MB // 2) + "]" * (TEN_MB // 2),
    "deep JSON object": lambda: '{"a":' * (TEN_MB // 10) + "1" + "}" * (TEN_MB // 10),
    "unclosed pretty JSON": lambda: "{\n" + '  "version": "6",\n' * (TEN_MB // 18),
    "NaN in a summary": lambda: (
        '{"version":"6","module_path":"m","profiles":[{"tool":"DHAT","summaries":{"total":'
        '{"summary":{"Dhat":{"TotalBytes":{"metrics":{"Left":{"Float":NaN}}}}}}}}]}'
    ),
}


@pytest.mark.parametrize("adapter", ADAPTERS)
@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_output_is_an_adapter_error(adapter: str, name: str) -> None:
    with pytest.raises(AdapterError, match=f"^{adapter}: "):
        parse(adapter, HOSTILE[name]())


ALL_SAMPLES = [
    (owner, path.name) for owner in ADAPTERS for path in sorted((SAMPLES / owner).iterdir())
]


@pytest.mark.parametrize(("owner", "name"), ALL_SAMPLES)
def test_no_other_harness_reads_a_sample(owner: str, name: str) -> None:
    text = sample(owner, name)
    for adapter in ("json", *ADAPTERS):
        if adapter != owner:
            with pytest.raises(AdapterError):
                parse(adapter, text)


def test_many_results_parse() -> None:
    lines = "".join(f"test case_{i} ... bench: 1,000 ns/iter (+/- 9)\n" for i in range(20_000))
    found = parse("rust_bench", lines)
    assert [m.benchmark for m in found[:2]] == ["case_0", "case_1"]
    assert len(found) == 20_000
