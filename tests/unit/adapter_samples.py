"""Samples written for the project under ``tests/adapter_samples/<adapter>/``, and comparing
what an adapter found with what a sample's table expects."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchrunner.adapters import Measurement

SAMPLES = Path(__file__).resolve().parent.parent / "adapter_samples"


def sample(adapter: str, name: str) -> str:
    """A sample as the runner hands it to an adapter: text, newlines as written."""
    return (SAMPLES / adapter / name).read_bytes().decode("utf-8")


def _numbers(m: Measurement) -> tuple[float, float | None, float | None]:
    return (m.value, m.lower_value, m.upper_value)


def assert_measurements(found: list[Measurement], expected: list[Measurement]) -> None:
    """The same benchmarks and measures in the same order; numbers equal up to rounding (the
    table holds them as decimals, the adapter computes them in binary floating point)."""
    assert [(m.benchmark, m.measure) for m in found] == [(m.benchmark, m.measure) for m in expected]
    for got, want in zip(found, expected, strict=True):
        for number, wanted in zip(_numbers(got), _numbers(want), strict=True):
            if wanted is None:
                assert number is None, got
            else:
                assert number == pytest.approx(wanted, rel=1e-12), got
