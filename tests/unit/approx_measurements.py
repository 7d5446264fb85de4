"""Comparing an adapter's measurements with the ones a test worked out by hand: names and
measures exactly, numbers to a relative 1e-9 (seconds -> nanoseconds is not exact in binary)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from benchrunner.adapters import Measurement

SAMPLES = Path(__file__).resolve().parent.parent / "adapter_samples"


def sample(adapter: str, name: str) -> str:
    """A sample written for the project, ``tests/adapter_samples/<adapter>/<name>``."""
    return (SAMPLES / adapter / name).read_text(encoding="utf-8")


def assert_measurements(found: Sequence[Measurement], expected: Sequence[Measurement]) -> None:
    assert [(m.benchmark, m.measure) for m in found] == [(m.benchmark, m.measure) for m in expected]
    for got, want in zip(found, expected, strict=True):
        numbers = [got.value, got.lower_value, got.upper_value]
        wanted = [want.value, want.lower_value, want.upper_value]
        assert [n is None for n in numbers] == [n is None for n in wanted], got.benchmark
        present = [n for n in numbers if n is not None]
        assert present == pytest.approx([n for n in wanted if n is not None], rel=1e-9), (
            got.benchmark
        )


def spreads(measurement: Measurement) -> tuple[float, float]:
    """How far below and above the value lower and upper lie (both must be there)."""
    assert measurement.lower_value is not None, measurement
    assert measurement.upper_value is not None, measurement
    return (
        measurement.value - measurement.lower_value,
        measurement.upper_value - measurement.value,
    )
