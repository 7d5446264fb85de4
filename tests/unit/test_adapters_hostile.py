"""Every adapter against hostile output: it raises AdapterError or returns finite measurements
with names the store can hold, and never hangs or crashes (docs/decisions/hostile-input.md)."""

from __future__ import annotations

import math
import random

import pytest

from benchrunner import adapters
from benchrunner.adapters.values import MAX_BENCHMARK_NAME, MAX_MEASURE_NAME

NAMES = sorted(adapters.ADAPTERS)


def _garbage(size: int) -> str:
    rng = random.Random(size)
    return bytes(rng.randrange(256) for _ in range(size)).decode("utf-8", errors="replace")


HOSTILE = {
    "empty": "",
    "binary garbage": _garbage(64 * 1024),
    "10 MB of lines": ("x" * 99 + "\n") * 100_000,
    "10 MB one line": "a" * 10_000_000,
    "10 MB of digits": "1" * 10_000_000,
    "deep JSON array": "[" * 100_000 + "]" * 100_000,
    "deep JSON object": '{"a":' * 50_000 + "1" + "}" * 50_000,
    "huge number": '{"b": {"latency": {"value": 1' + "0" * 400 + "}}}",
    "NaN": '{"b": {"latency": {"value": NaN}}}',
    "infinity": '{"b": {"latency": {"value": Infinity}}}',
    "NUL bytes": "\x00" * 10_000,
    "lone surrogates": "\ud800" * 1000,
    "json null": "null",
    "json list": "[1, 2, 3]",
}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("adapter", NAMES)
@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_output_is_refused_or_read_sanely(adapter: str, case: str) -> None:
    try:
        found = adapters.parse(adapter, HOSTILE[case])
    except adapters.AdapterError as exc:
        assert str(exc)
        return
    for m in found:
        assert 1 <= len(m.benchmark) <= MAX_BENCHMARK_NAME
        assert 1 <= len(m.measure) <= MAX_MEASURE_NAME
        for number in (m.value, m.lower_value, m.upper_value):
            assert number is None or math.isfinite(number)
