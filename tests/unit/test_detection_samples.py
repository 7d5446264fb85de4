"""The ``samples`` test's statistic on worked examples: each row can come out otherwise."""

from __future__ import annotations

import numpy as np
import pytest

from benchrunner.detection import Model, ModelError, TestKind, validate
from benchrunner.detection.samples import SPREAD_FACTOR, Verdict, compare


def _runs(levels: list[float], cv: float, seed: int, samples: int = 5) -> list[list[float]]:
    """One run per level: ``samples`` normal samples around it."""
    generator = np.random.default_rng(seed)
    return [[float(v) for v in generator.normal(level, level * cv, samples)] for level in levels]


def _quiet(count: int, seed: int, level: float = 100.0, cv: float = 0.005) -> list[list[float]]:
    return _runs([level] * count, cv, seed)


def test_the_same_runs_are_the_same() -> None:
    runs = _quiet(20, 1)
    found = compare(runs[:-1], runs[-1:])
    assert found.verdict is Verdict.SAME, found.reason
    assert found.shift is not None and abs(found.shift) < 0.01


@pytest.mark.parametrize("step", [0.05, -0.05])
def test_two_runs_beyond_the_spread_are_different(step: float) -> None:
    before = _quiet(10, 4, cv=0.01)
    after = _runs([100.0 * (1 + step)], 0.01, 5)
    found = compare([*before, *after], _runs([100.0 * (1 + step)], 0.01, 6))
    assert found.verdict is Verdict.DIFFERENT, found.reason
    assert found.shift == pytest.approx(step, abs=0.015)
    assert found.pvalue is not None and found.pvalue <= 0.05
    assert found.beyond and found.borrowed == 1  # the step began at the run before


@pytest.mark.parametrize("step", [0.05, -0.05])
def test_one_run_beyond_the_spread_is_unknown_until_another_agrees(step: float) -> None:
    """A step and a one-off slow run look alike in the run that shows them."""
    before = _quiet(10, 7, cv=0.01)
    found = compare(before, _runs([100.0 * (1 + step)], 0.01, 8))
    assert found.verdict is Verdict.UNKNOWN, found.reason
    assert found.beyond and "not every judged run agrees" in found.reason
    # a one-off, then a run back at the old level: the same
    back = compare([*before, *_runs([100.0 * (1 + step)], 0.01, 8)], _quiet(1, 9, cv=0.01))
    assert back.verdict is Verdict.SAME, back.reason


def test_re_runs_of_the_report_count_as_its_second_run() -> None:
    before = _quiet(10, 10)
    report, rerun = _runs([110.0, 110.0], 0.005, 11)
    found = compare(before, [report, rerun])
    assert found.verdict is Verdict.DIFFERENT and found.borrowed == 0
    blip = compare(before, [report, *_quiet(1, 12)])
    assert blip.verdict is Verdict.UNKNOWN, blip.reason


def test_a_shift_below_the_minimum_effect_is_same_and_above_it_different() -> None:
    before = _runs([100.0] * 12, 0.0005, 13)
    after = _runs([101.0, 101.0], 0.0005, 14)
    assert compare([*before, after[0]], after[1:]).verdict is Verdict.SAME
    found = compare([*before, after[0]], after[1:], min_effect=0.005)
    assert found.verdict is Verdict.DIFFERENT, found.reason


def test_a_shift_of_half_the_minimum_effect_is_unknown_only_where_the_spread_is_wide() -> None:
    """A run of a 2 % step measures 1.5 % often enough where runs wander by 1 %: unknown (a
    duet may tell); where they wander by 0.05 %, 1.5 % is what it is, under 2 %: the same."""
    generator = np.random.default_rng(18)
    wide = _runs([float(v) for v in generator.normal(100.0, 1.0, 30)], 0.001, 19)
    found = compare(wide, _runs([101.5], 0.001, 20))
    assert found.limit is not None and found.limit > 0.02, found.reason
    assert found.verdict is Verdict.UNKNOWN, found.reason
    assert "within the run-to-run spread" in found.reason
    narrow = compare(_runs([100.0] * 30, 0.0005, 21), _runs([101.5], 0.0005, 22))
    assert narrow.limit == 0.02 and narrow.verdict is Verdict.SAME, narrow.reason
    under_half = compare(wide, _runs([100.5], 0.001, 23))
    assert under_half.verdict is Verdict.SAME, under_half.reason


def test_a_shift_within_the_run_to_run_spread_is_unknown() -> None:
    """Runs that wander by 2 % (each run's five samples are tight): a 5 % move is not beyond
    3.5 spreads, though a rank test over the pooled samples would be sure of it."""
    generator = np.random.default_rng(15)
    levels = [float(v) for v in generator.normal(100.0, 2.0, 30)]
    before = _runs(levels, 0.001, 16)
    after = _runs([105.0, 105.0], 0.001, 17)
    found = compare([*before, after[0]], after[1:])
    assert found.verdict is Verdict.UNKNOWN, found.reason
    assert "within the run-to-run spread" in found.reason
    assert found.spread is not None and found.spread == pytest.approx(0.02, rel=0.4)
    assert found.limit == pytest.approx(SPREAD_FACTOR * found.spread)


def test_a_minority_of_runs_at_another_level_widens_the_limit() -> None:
    """Bimodal: one run in five lands 10 % higher. A new run there is within the spread."""
    levels = [110.0 if i % 5 == 0 else 100.0 for i in range(40)]
    before = _runs(levels, 0.002, 18)
    found = compare([*before, *_runs([110.0], 0.002, 19)], _runs([110.0], 0.002, 20))
    assert found.verdict is not Verdict.DIFFERENT, found.reason
    assert found.limit is not None and found.limit > 0.10


def test_a_slow_drift_is_not_a_step() -> None:
    levels = [100.0 * (1 + 0.1 * i / 63) for i in range(66)]
    runs = _runs(levels, 0.002, 21)
    found = compare(runs[:-1], runs[-1:])
    assert found.verdict is not Verdict.DIFFERENT, found.reason


@pytest.mark.parametrize(
    ("baseline", "reason"),
    [(0, "too few runs"), (3, "too few runs"), (4, "too few runs")],
)
def test_a_short_window_is_unknown(baseline: int, reason: str) -> None:
    """Four runs before the report: one joins the report as its second run, three are left."""
    found = compare(_quiet(baseline, 22), _runs([200.0], 0.005, 23))
    assert found.verdict is Verdict.UNKNOWN
    assert reason in found.reason


def test_seven_baseline_runs_cannot_reach_the_rank_test_level() -> None:
    """Two runs above all seven: p = 2/36 > 0.05; above all eight: p = 2/45."""
    step = _runs([200.0], 0.005, 24)
    seven = compare([*_quiet(7, 25), *step], _runs([200.0], 0.005, 26))
    assert seven.verdict is Verdict.UNKNOWN and seven.pvalue == pytest.approx(2 / 36)
    eight = compare([*_quiet(8, 25), *step], _runs([200.0], 0.005, 26))
    assert eight.verdict is Verdict.DIFFERENT and eight.pvalue == pytest.approx(2 / 45)


def test_constant_runs_compare_without_error() -> None:
    assert compare([[5.0] * 3] * 10, [[5.0] * 3]).verdict is Verdict.SAME
    assert compare([[5.0] * 3] * 10, [[6.0] * 3, [6.0] * 3]).verdict is Verdict.DIFFERENT


def test_a_zero_baseline_is_unknown() -> None:
    found = compare([[0.0] * 3] * 10, [[1.0] * 3] * 2)
    assert found.verdict is Verdict.UNKNOWN and "median is 0" in found.reason


def test_one_slow_sample_does_not_make_a_difference() -> None:
    before = _quiet(20, 26)
    after = [*_quiet(1, 27)[0], 400.0]
    assert compare(before, [after]).verdict is Verdict.SAME


def test_runs_without_samples_are_left_out() -> None:
    before = [*_quiet(10, 28), []]
    assert compare(before, [[], *_quiet(1, 29)]).verdict is Verdict.SAME


def test_the_samples_model_gets_its_defaults_and_takes_no_boundary() -> None:
    checked = validate(Model(TestKind.SAMPLES))
    assert (checked.max_pvalue, checked.min_magnitude) == (0.05, 0.02)
    kept = validate(Model(TestKind.SAMPLES, max_pvalue=0.01, min_magnitude=0.05, window=60))
    assert (kept.max_pvalue, kept.min_magnitude, kept.window) == (0.01, 0.05, 60)
    with pytest.raises(ModelError, match="samples model takes no upper_boundary"):
        validate(Model(TestKind.SAMPLES, upper_boundary=0.9))
    with pytest.raises(ModelError, match="min_magnitude must be"):
        validate(Model(TestKind.SAMPLES, min_magnitude=-0.1))


def test_64_runs_of_1000_samples_against_100_are_compared() -> None:
    before = _runs([100.0] * 64, 0.01, 30, samples=1_000)
    after = _runs([105.0] * 2, 0.01, 31, samples=100)
    found = compare([*before, after[0]], after[1:])
    assert found.verdict is Verdict.DIFFERENT, found.reason
    assert found.shift == pytest.approx(0.05, abs=0.005)
    assert compare(before, _runs([100.0], 0.01, 32, samples=100)).verdict is Verdict.SAME
