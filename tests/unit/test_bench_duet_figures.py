"""The arithmetic of benchmarks/duet_sensitivity: the plain runs' interval and the rates.

Only the pure helpers; the benchmark's figures are never asserted.
"""

from __future__ import annotations

import math

import pytest
from benchmarks.duet_sensitivity import Verdict, flagged, rates
from benchmarks.samples import cv, welch_ratio_interval


def test_welch_interval_is_a_ratio_of_geometric_means_around_the_true_change() -> None:
    baseline = [98.0, 102.0, 99.0, 101.0, 100.0, 100.5, 99.5]
    contender = [value * 1.05 for value in baseline]
    ratio, lower, upper = welch_ratio_interval(baseline, contender, confidence=0.95)
    assert ratio == pytest.approx(1.05)
    assert 1.0 < lower < 1.05 < upper
    # Symmetric in logs: the same distance below and above the ratio.
    assert math.log(ratio / lower) == pytest.approx(math.log(upper / ratio))


def test_welch_interval_widens_with_confidence_and_holds_one_for_equal_samples() -> None:
    values = [98.0, 102.0, 99.0, 101.0, 100.0]
    _, low95, high95 = welch_ratio_interval(values, list(reversed(values)), confidence=0.95)
    _, low99, high99 = welch_ratio_interval(values, list(reversed(values)), confidence=0.99)
    assert low99 < low95 < 1.0 < high95 < high99


def verdict(slowdown: float, lower: float, upper: float, method: str = "duet") -> Verdict:
    return Verdict(method, "latency", slowdown, (lower + upper) / 2, lower, upper)


@pytest.mark.parametrize(
    ("slowdown", "lower", "upper", "margin", "expected"),
    [
        (0.0, 1.001, 1.02, 0.0, True),  # no change, yet an alert: a false positive
        (0.0, 0.98, 0.999, 0.0, True),  # either way
        (0.0, 0.99, 1.01, 0.0, False),
        (0.0, 1.001, 1.02, 0.005, False),  # within the margin
        (0.01, 1.001, 1.02, 0.0, True),  # detected
        (0.01, 0.98, 0.999, 0.0, False),  # an alert the wrong way is no detection
        (0.01, 0.995, 1.02, 0.0, False),
    ],
)
def test_flagged(
    slowdown: float, lower: float, upper: float, margin: float, expected: bool
) -> None:
    assert flagged(verdict(slowdown, lower, upper), margin) is expected


def test_rates_count_per_measure_method_and_slowdown() -> None:
    verdicts = [
        verdict(0.01, 1.001, 1.02),
        verdict(0.01, 0.99, 1.02),
        verdict(0.01, 1.001, 1.02, method="plain"),
        verdict(0.0, 0.99, 1.01),
    ]
    assert rates(verdicts, 0.0) == {
        ("latency", "duet", 0.01): (1, 2),
        ("latency", "plain", 0.01): (1, 1),
        ("latency", "duet", 0.0): (0, 1),
    }


def test_cv_is_the_sample_spread_over_the_mean() -> None:
    assert cv([9.0, 10.0, 11.0]) == pytest.approx(0.1)
