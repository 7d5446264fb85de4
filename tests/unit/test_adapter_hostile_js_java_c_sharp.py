"""Hostile output for js_benchmark, js_time, js_vitest, java_jmh and c_sharp_dot_net: a clear
AdapterError, never a crash or a hang (most inputs are ~10 MB, which quadratic parsing would
not finish)."""

from __future__ import annotations

import random

import pytest

from benchrunner.adapters import AdapterError, parse

ADAPTERS = ("js_benchmark", "js_time", "js_vitest", "java_jmh", "c_sharp_dot_net")
ONE_MB = 1024 * 1024
TEN_MB = 10 * ONE_MB


def _garbage() -> str:
    noise = random.Random(9).randbytes(TEN_MB)
    return noise.decode("utf-8", errors="surrogateescape")


HOSTILE = {
    "spaces": " " * TEN_MB,
    "tabs and x": "x\t" * (TEN_MB // 2),
    "one long almost-result line": "a x 1 ops/sec ±1% (" * (TEN_MB // 20),
    "almost-timer lines": "a: 1ms - timer\n" * (TEN_MB // 15),
    "almost-result lines": "a: 1ms x 1 ops/sec ±1% (1 runs sampled\n" * (TEN_MB // 40),
    # Lines each parser must look at closely: fewer, to keep the test fast; still linear.
    "lines ending like results": "a: b ops/sec d e sampled)\n" * (ONE_MB // 26),
    "lines ending like timers": "a: b c d ms\n" * (ONE_MB // 12),
    "colons": ":" * TEN_MB,
    "garbage": _garbage(),
    "NUL": "\x00" * TEN_MB,
    "deep JSON": "[" * (TEN_MB // 2) + "]" * (TEN_MB // 2),
    "deep object": '{"files":' * 200_000 + "[]" + "}" * 200_000,
    "NaN": '[{"benchmark": "b", "primaryMetric": {"score": NaN}}]',
}


@pytest.mark.parametrize("adapter", ADAPTERS)
@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_output_is_an_adapter_error(adapter: str, name: str) -> None:
    with pytest.raises(AdapterError, match=f"^{adapter}: "):
        parse(adapter, HOSTILE[name])


def test_many_results_parse() -> None:
    lines = "".join(f"case {i} x 1,000 ops/sec ±1% (9 runs sampled)\n" for i in range(20_000))
    found = parse("js_benchmark", lines)
    assert [m.benchmark for m in found[:2]] == ["case 0", "case 1"]
    assert len(found) == 20_000
