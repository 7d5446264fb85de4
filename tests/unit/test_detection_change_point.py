from __future__ import annotations

import itertools
import json
import math
import statistics
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from scipy import stats

from benchrunner.detection import ChangePoint
from benchrunner.detection.change_point import (
    _best_split,
    _relaxed,
    _t_tests,
    change_points_many,
)
from tests.unit.change_point_cases import RECORDED, Case, cases

SEEDS = range(5)


def _t_test(
    left: list[float] | np.ndarray[Any, Any], right: list[float] | np.ndarray[Any, Any]
) -> tuple[float, float]:
    """``_t_tests`` of one pair of sides (a batch of one)."""
    strengths, pvalues = _t_tests(
        np.array([left], dtype=np.float64), np.array([right], dtype=np.float64)
    )
    return float(strengths[0]), float(pvalues[0])


def change_points_of(series: Sequence[float], **parameters: Any) -> list[ChangePoint]:
    """``change_points_many`` of one series (a batch of one)."""
    [found] = change_points_many([series], **parameters)
    return found


def noisy(seed: int, *segments: tuple[float, int]) -> list[float]:
    """Segments of (level, length) with 1 % Gaussian noise, the same for the same seed."""
    rng = np.random.default_rng(seed)
    return [float(x) for level, size in segments for x in rng.normal(level, level / 100, size)]


def test_a_clean_step() -> None:
    series = [10.0] * 20 + [12.0] * 20
    assert change_points_of(series) == [ChangePoint(20, 10.0, 12.0, 0.2, 0.0)]


def test_a_small_step_worked_by_hand() -> None:
    """Means 2 and 12, each side's sample variance 1: pooled variance 1, standard error
    sqrt(1/3 + 1/3), t = 10 / sqrt(2/3) with 4 degrees of freedom."""
    [point] = change_points_of([1.0, 2.0, 3.0, 11.0, 12.0, 13.0])
    t = 10 / math.sqrt(2 / 3)
    assert (point.index, point.before, point.after, point.magnitude) == (3, 2.0, 12.0, 5.0)
    assert point.pvalue == pytest.approx(2 * stats.t.sf(t, 4), rel=1e-9)
    assert change_points_of([1.0, 2.0, 3.0, 11.0, 12.0, 13.0], max_pvalue=point.pvalue / 2) == []


def test_a_drop_has_a_negative_magnitude() -> None:
    [point] = change_points_of([50.0] * 10 + [40.0] * 10)
    assert point.index == 10
    assert point.magnitude == pytest.approx(-0.2)


@pytest.mark.parametrize("after", [1, 2, 5, 30, 100, 300])
@pytest.mark.parametrize("seed", SEEDS)
def test_one_step_is_one_change_point(seed: int, after: int) -> None:
    """+20 % after 30 stable points: one change point at the step, however long the series
    runs on after it (a single new value included)."""
    series = noisy(seed, (100.0, 30), (120.0, after))
    [point] = change_points_of(series)
    assert point.index == 30
    assert point.before == pytest.approx(statistics.fmean(series[:30]))
    assert point.after == pytest.approx(statistics.fmean(series[30:]))
    assert point.magnitude == pytest.approx(0.2, abs=0.04)
    assert point.pvalue <= 0.001


@pytest.mark.parametrize("size", [30, 60, 200])
@pytest.mark.parametrize("seed", SEEDS)
def test_a_flat_noisy_series_has_none(seed: int, size: int) -> None:
    assert change_points_of(noisy(seed, (100.0, size))) == []


def test_noise_alone_rarely_makes_a_change_point() -> None:
    """E-divisive picks the best split before testing it, so noise alone passes now and then
    (3 of these 100 series at the defaults); a min_magnitude above the noise removes them."""
    series = [noisy(seed, (100.0, 60)) for seed in range(100, 200)]
    assert sum(bool(change_points_of(s)) for s in series) <= 6
    assert not any(change_points_of(s, min_magnitude=0.05) for s in series)


@pytest.mark.parametrize("seed", SEEDS)
def test_two_steps_are_two_change_points(seed: int) -> None:
    series = noisy(seed, (100.0, 30), (120.0, 40), (100.0, 50))
    found = change_points_of(series)
    assert [(p.index, round(p.magnitude, 1)) for p in found] == [(30, 0.2), (70, -0.2)]


@pytest.mark.parametrize("seed", SEEDS)
def test_an_early_step_in_a_long_series_is_found(seed: int) -> None:
    """Windows overlap from the start, so a step after 6 points is judged among few points,
    not drowned in the 200 after it."""
    assert [p.index for p in change_points_of(noisy(seed, (100.0, 6), (120.0, 200)))] == [6]


@pytest.mark.parametrize("seed", SEEDS)
def test_min_magnitude_drops_small_changes(seed: int) -> None:
    rng = np.random.default_rng(seed)
    series = [100.0 + x for x in rng.normal(0, 0.1, 40)] + [
        103.0 + x for x in rng.normal(0, 0.1, 40)
    ]
    [point] = change_points_of(series)
    assert (point.index, round(point.magnitude, 2)) == (40, 0.03)
    assert change_points_of(series, min_magnitude=0.05) == []
    assert change_points_of(series, min_magnitude=0.03 * 0.9) == [point]


@pytest.mark.parametrize("seed", SEEDS)
def test_every_change_point_passes_and_describes_its_segments(seed: int) -> None:
    series = noisy(seed, (50.0, 45), (55.0, 20), (54.0, 25), (80.0, 90), (60.0, 3))
    found = change_points_of(series, window=20, max_pvalue=0.01, min_magnitude=0.02)
    assert found, "the 80 -> 60 and 55 -> 80 steps at least"
    edges = [0, *(p.index for p in found), len(series)]
    segments = [(edges[i], edges[i + 1], edges[i + 2]) for i in range(len(found))]
    for point, (start, index, stop) in zip(found, segments, strict=True):
        assert point.index == index
        assert point.before == pytest.approx(statistics.fmean(series[start:index]))
        assert point.after == pytest.approx(statistics.fmean(series[index:stop]))
        assert point.magnitude == pytest.approx((point.after - point.before) / point.before)
        assert point.pvalue <= 0.01 and abs(point.magnitude) >= 0.02
        expected = stats.ttest_ind(series[start:index], series[index:stop]).pvalue
        assert point.pvalue == pytest.approx(expected)


def test_same_series_same_answer() -> None:
    series = noisy(7, (100.0, 40), (130.0, 40), (90.0, 40))
    first = change_points_of(series)
    assert first == change_points_of(tuple(series)) == change_points_of(np.array(series).tolist())
    assert [p.index for p in first] == [40, 80]


@pytest.mark.parametrize(
    "series",
    [[], [5.0], [1.0, 2.0], [3.0] * 50, [0.0] * 10],
)
def test_nothing_to_find(series: list[float]) -> None:
    assert change_points_of(series) == []


def test_a_change_from_zero_has_no_relative_magnitude() -> None:
    [point] = change_points_of([0.0] * 10 + [5.0] * 10)
    assert (point.index, point.before, point.after, point.magnitude) == (10, 0.0, 5.0, 0.0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"window": 1}, "window must be an integer number of points >= 2, got 1"),
        ({"window": True}, "window must be an integer"),
        ({"window": 2.5}, "window must be an integer"),
        ({"max_pvalue": 0.0}, r"max_pvalue must be in \(0, 1\], got 0.0"),
        ({"max_pvalue": 1.5}, r"max_pvalue must be in \(0, 1\]"),
        ({"max_pvalue": math.nan}, r"max_pvalue must be in \(0, 1\]"),
        ({"min_magnitude": -0.1}, "min_magnitude must be >= 0, got -0.1"),
        ({"min_magnitude": math.nan}, "min_magnitude must be >= 0"),
    ],
)
def test_bad_parameters(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        change_points_of([1.0, 2.0, 3.0], **kwargs)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_value_that_is_not_finite_is_named(bad: float) -> None:
    with pytest.raises(ValueError, match=rf"value 2 of series 0 is {bad}, not a finite number"):
        change_points_of([1.0, 2.0, bad, 4.0])


def naive_qhat(left: list[float], right: list[float]) -> float:
    """Matteson and James's Q-hat written out: (nm/(n+m)) times the energy distance."""
    n, m = len(left), len(right)
    between = statistics.fmean(abs(x - y) for x in left for y in right)
    within_left = (
        statistics.fmean(abs(x - y) for x, y in itertools.combinations(left, 2)) if n > 1 else 0.0
    )
    within_right = (
        statistics.fmean(abs(x - y) for x, y in itertools.combinations(right, 2)) if m > 1 else 0.0
    )
    return n * m / (n + m) * (2 * between - within_left - within_right)


@pytest.mark.parametrize("size", [2, 3, 5, 8, 13])
def test_best_split_maximises_qhat(size: int) -> None:
    rng = np.random.default_rng(size)
    for _ in range(10):
        values = [float(x) for x in rng.normal(0, 1, size)]
        best = max(
            (naive_qhat(values[:tau], values[tau:kappa]), tau)
            for tau in range(1, size)
            for kappa in range(tau + 1, size + 1)
        )
        qhat, tau = _best_split(np.array(values))
        assert qhat == pytest.approx(best[0], rel=1e-9)
        at_tau = max(naive_qhat(values[:tau], values[tau:k]) for k in range(tau + 1, size + 1))
        assert at_tau == pytest.approx(qhat, rel=1e-9)


@pytest.mark.parametrize(
    ("max_pvalue", "first_pass"),
    [(0.001, 0.01), (0.01, 0.1), (0.049, 0.49), (0.05, 0.1), (0.25, 0.5), (0.5, 0.5), (1.0, 1.0)],
)
def test_the_first_pass_is_relaxed_as_otava_relaxes_it(
    max_pvalue: float, first_pass: float
) -> None:
    assert _relaxed(max_pvalue) == pytest.approx(first_pass)


RECORDED_CASES = cases()


@pytest.mark.parametrize("case", RECORDED_CASES, ids=[f"seed{c.seed}" for c in RECORDED_CASES])
def test_the_recorded_change_points_are_found_again(case: Case) -> None:
    """Exactly (to the last bit) what the detector found when the cases were recorded:
    computing it faster must not change an answer."""
    recorded = {entry["seed"]: entry["change_points"] for entry in json.loads(RECORDED.read_text())}
    found = change_points_of(case.series, **case.parameters)
    assert [[p.index, p.before, p.after, p.magnitude, p.pvalue] for p in found] == recorded[
        case.seed
    ]


@pytest.mark.parametrize("sizes", [(1, 2), (2, 1), (1, 5), (3, 3), (7, 29), (30, 1), (15, 45)])
def test_the_t_test_is_scipys_to_the_last_bit(sizes: tuple[int, int]) -> None:
    rng = np.random.default_rng(sum(sizes))
    for scale in (1e-3, 1.0, 1e6):
        left, right = (rng.normal(100 * scale, scale, size) for size in sizes)
        expected = stats.ttest_ind_from_stats(
            np.mean(left),
            np.std(left, ddof=1) if len(left) > 1 else 0.0,
            len(left),
            np.mean(right),
            np.std(right, ddof=1) if len(right) > 1 else 0.0,
            len(right),
        )
        assert _t_test(left, right) == (abs(float(expected.statistic)), float(expected.pvalue))


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ([2.0, 2.0], [2.0, 2.0]),  # 0 / 0
        ([2.0, 2.0], [3.0, 3.0]),  # a difference over no spread
        ([1e308, 1.7e308], [1.0, 2.0]),  # sums past the largest float
        ([1e308, 1.5e308, 1.7e308], [-1e308, -1.7e308]),
    ],
)
def test_the_t_test_at_the_edges_is_scipys(left: list[float], right: list[float]) -> None:
    """What SciPy answers there, a NaN p-value read as "cannot tell"."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        expected = stats.ttest_ind_from_stats(
            np.mean(left), np.std(left, ddof=1), len(left),
            np.mean(right), np.std(right, ddof=1), len(right),
        )  # fmt: skip
        found = _t_test(np.array(left), np.array(right))
    statistic, pvalue = float(expected.statistic), float(expected.pvalue)
    assert found == ((0.0, 1.0) if math.isnan(pvalue) else (abs(statistic), pvalue))


def test_many_series_at_once_find_the_recorded_change_points() -> None:
    """``change_points_many`` over all recorded cases of one set of parameters at once
    answers what it answered of each alone (a batch of one), to the last bit."""
    recorded = {entry["seed"]: entry["change_points"] for entry in json.loads(RECORDED.read_text())}
    by_parameters: dict[str, list[Case]] = {}
    for case in RECORDED_CASES:
        by_parameters.setdefault(json.dumps(case.parameters, sort_keys=True), []).append(case)
    for group in by_parameters.values():
        found = change_points_many([c.series for c in group], **group[0].parameters)
        for case, points in zip(group, found, strict=True):
            as_lists = [[p.index, p.before, p.after, p.magnitude, p.pvalue] for p in points]
            assert as_lists == recorded[case.seed], case.seed


def _many_series(seed: int) -> list[list[float]]:
    """Noisy series of look-back lengths, some with steps, and the edges: empty, one or two
    values, constant, ties, values near the largest float."""
    rng = np.random.default_rng(seed)
    found: list[list[float]] = [[], [1.0], [1.0, 2.0], [5.0] * 60, [0.0] * 30 + [1.0] * 30]
    found += [[1e308, 1.7e308, 1.5e308] * 20, [float(x) for x in np.round(rng.normal(10, 1, 60))]]
    for _ in range(300):
        size = int(rng.choice([60, 60, 59, 45, 31, 7, 120]))
        level = float(rng.uniform(1, 1e6))
        values = rng.normal(level, level * float(rng.choice([0.001, 0.01, 0.1])), size)
        if rng.random() < 0.3:
            values[int(rng.integers(1, size)) :] *= 1 + float(rng.uniform(-0.2, 0.2))
        found.append([float(x) for x in values])
    return found


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize(
    "parameters", [{}, {"window": 20, "max_pvalue": 0.05}, {"max_pvalue": 0.5}]
)
def test_many_series_at_once_answer_as_each_alone(seed: int, parameters: dict[str, Any]) -> None:
    series = _many_series(seed)
    together = change_points_many(series, **parameters)
    apart = [change_points_of(s, **parameters) for s in series]
    assert [i for i, (a, b) in enumerate(zip(together, apart, strict=True)) if a != b] == []
    assert sum(bool(points) for points in apart) > 10  # steps were found, not only none


def test_the_batched_t_test_answers_each_row_as_a_batch_of_one() -> None:
    rng = np.random.default_rng(7)
    edges = [([2.0, 2.0], [2.0, 2.0]), ([2.0, 2.0], [3.0, 3.0]), ([1e308, 1.7e308], [1.0, 2.0])]
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        strengths, pvalues = _t_tests(
            np.array([e[0] for e in edges]), np.array([e[1] for e in edges])
        )
        alone = [_t_test(left, right) for left, right in edges]
    assert list(zip(strengths.tolist(), pvalues.tolist(), strict=True)) == alone
    assert alone == [(0.0, 1.0), (math.inf, 0.0), (0.0, 1.0)]
    for sizes in [(1, 1), (1, 2), (3, 27), (15, 15), (29, 1)]:
        rows = rng.normal(100, 1, (50, sum(sizes)))
        rows[::3, sizes[0] :] *= 1.05
        strengths, pvalues = _t_tests(rows[:, : sizes[0]], rows[:, sizes[0] :])
        found = list(zip(strengths.tolist(), pvalues.tolist(), strict=True))
        assert found == [_t_test(row[: sizes[0]], row[sizes[0] :]) for row in rows]


def test_many_series_check_their_values_and_parameters() -> None:
    with pytest.raises(ValueError, match=r"value 1 of series 1 is nan, not a finite number"):
        change_points_many([[1.0, 2.0], [3.0, math.nan]])
    with pytest.raises(ValueError, match="window must be an integer"):
        change_points_many([[1.0, 2.0, 3.0]], window=1)
    assert change_points_many([]) == []
