"""The ``samples`` test's statistic on worked examples: each row can come out otherwise."""

from __future__ import annotations

import numpy as np
import pytest

from benchrunner.detection import Model, ModelError, TestKind, validate
from benchrunner.detection.samples import Verdict, compare


def _noisy(center: float, cv: float, count: int, seed: int) -> list[float]:
    generator = np.random.default_rng(seed)
    return [float(v) for v in generator.normal(center, center * cv, count)]


def test_the_same_data_is_the_same() -> None:
    values = _noisy(100.0, 0.005, 20, 1)
    found = compare(values, values)
    assert found.verdict is Verdict.SAME, found.reason
    assert found.shift == pytest.approx(0.0, abs=1e-12)


def test_two_draws_of_one_low_noise_distribution_are_the_same() -> None:
    found = compare(_noisy(100.0, 0.005, 30, 2), _noisy(100.0, 0.005, 30, 3))
    assert found.verdict is Verdict.SAME, found.reason


@pytest.mark.parametrize("step", [0.05, -0.05])
def test_a_five_percent_shift_with_low_noise_is_different(step: float) -> None:
    before = _noisy(100.0, 0.01, 10, 4)
    after = _noisy(100.0 * (1 + step), 0.01, 5, 5)
    found = compare(before, after)
    assert found.verdict is Verdict.DIFFERENT, found.reason
    assert found.shift == pytest.approx(step, abs=0.015)
    assert found.pvalue is not None and found.pvalue < 0.05
    assert found.low is not None and found.high is not None and found.low <= found.high


def test_a_shift_below_the_minimum_effect_is_not_different() -> None:
    before = _noisy(100.0, 0.001, 40, 6)
    after = _noisy(101.0, 0.001, 40, 7)
    assert compare(before, after).verdict is Verdict.SAME
    assert compare(before, after, min_effect=0.005).verdict is Verdict.DIFFERENT


@pytest.mark.parametrize(("baseline", "new"), [(3, 10), (10, 3), (3, 3)])
def test_three_samples_are_unknown(baseline: int, new: int) -> None:
    found = compare(_noisy(100.0, 0.01, baseline, 8), _noisy(200.0, 0.01, new, 9))
    assert found.verdict is Verdict.UNKNOWN
    assert "too few samples" in found.reason


def test_noise_as_large_as_the_shift_is_unknown() -> None:
    found = compare(_noisy(100.0, 0.10, 6, 10), _noisy(103.0, 0.10, 6, 11))
    assert found.verdict is Verdict.UNKNOWN, found.reason
    assert "straddles" in found.reason


def test_constant_samples_compare_without_error() -> None:
    assert compare([5.0] * 8, [5.0] * 8).verdict is Verdict.SAME
    assert compare([5.0] * 8, [6.0] * 8).verdict is Verdict.DIFFERENT


def test_a_zero_baseline_is_unknown() -> None:
    assert compare([0.0] * 8, [1.0] * 8).verdict is Verdict.UNKNOWN


def test_one_slow_round_does_not_make_a_difference() -> None:
    before = _noisy(100.0, 0.005, 30, 12)
    after = [*_noisy(100.0, 0.005, 29, 13), 400.0]
    assert compare(before, after).verdict is Verdict.SAME


def test_the_samples_model_gets_its_defaults_and_takes_no_boundary() -> None:
    checked = validate(Model(TestKind.SAMPLES))
    assert (checked.max_pvalue, checked.min_magnitude) == (0.05, 0.02)
    kept = validate(Model(TestKind.SAMPLES, max_pvalue=0.01, min_magnitude=0.05, window=60))
    assert (kept.max_pvalue, kept.min_magnitude, kept.window) == (0.01, 0.05, 60)
    with pytest.raises(ModelError, match="samples model takes no upper_boundary"):
        validate(Model(TestKind.SAMPLES, upper_boundary=0.9))
    with pytest.raises(ModelError, match="min_magnitude must be"):
        validate(Model(TestKind.SAMPLES, min_magnitude=-0.1))


def test_a_window_of_64_000_samples_against_100_000_is_compared_within_bounds() -> None:
    """64 runs of 1,000 samples against 100 iterations of 1,000: the pairwise differences of
    the whole sides would be 6.4 billion; each side is thinned to its quantiles instead."""
    before = _noisy(100.0, 0.01, 64_000, 6)
    after = _noisy(105.0, 0.01, 100_000, 7)
    found = compare(before, after)
    assert found.verdict is Verdict.DIFFERENT, found.reason
    assert found.shift == pytest.approx(0.05, abs=0.005)
    assert compare(before, _noisy(100.0, 0.01, 100_000, 8)).verdict is Verdict.SAME
