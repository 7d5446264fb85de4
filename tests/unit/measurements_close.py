"""Comparing an adapter's measurements with ones computed by hand from a sample."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from benchrunner.adapters import Measurement

RELATIVE = 1e-12
"""Hand-computed decimals and the adapter's float arithmetic agree to this; a wrong number
(another statistic, a unit off by 1000, a swapped bound) is far outside it."""


def _close(got: float | None, want: float | None) -> bool:
    if got is None or want is None:
        return got is want
    return got == pytest.approx(want, rel=RELATIVE)


def assert_measurements(found: Sequence[Measurement], expected: Sequence[Measurement]) -> None:
    """The same benchmarks and measures in the same order, each number equal to ``RELATIVE``;
    a bound present on one side only is a mismatch."""
    assert [(m.benchmark, m.measure) for m in found] == [(m.benchmark, m.measure) for m in expected]
    for got, want in zip(found, expected, strict=True):
        for field in ("value", "lower_value", "upper_value"):
            assert _close(getattr(got, field), getattr(want, field)), (got, want, field)
