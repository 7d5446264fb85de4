"""Change points: where a series of measurements shifted, and by how much.

E-divisive means with a Student's t-test for significance, the way Apache Otava (formerly
DataStax's Hunter; Fleming et al., "Hunter: Using Change Point Detection to Hunt for Performance
Regressions", ICPE 2023) runs it, written here for NumPy and SciPy:

1. *Split.* Windows of ``window`` points slide over the series half a window apart, so a
   change near the start of a long series is judged among few points, not drowned in all that
   follows. In each window, E-divisive means picks the split that maximises the energy
   statistic Q-hat (Matteson and James, 2014, with distance |x - y|) over every interval
   between the changes found so far, and keeps it while a two-sided Student's t-test between
   the two sides of that interval gives a p-value within a relaxed threshold (ten times
   ``max_pvalue`` below 0.05, twice it below 0.5). No permutations, so no randomness: the same
   series always gives the same answer.
2. *Merge.* The union of those weak change points is judged again, each between its
   neighbours: while some p-value is above ``max_pvalue``, the weakest of those is dropped,
   then while some relative change is smaller than ``min_magnitude``, the smallest is dropped;
   each drop re-tests its neighbours, whose segments just grew.

Two choices differ from Otava, both so that a real step followed by a single new value (the
case a regression alert is about) is not lost to a spurious split just before it: the next
window never jumps to the last change found (Otava's does, which can leave the step with one
point of context), and among the change points that fail ``max_pvalue`` the one dropped first
is the one with the smallest |t|, not the largest p-value (a step with one point after it has
a large |t| but, with few degrees of freedom, a p-value that only the merge makes small).

What is left is one change point per real shift.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

Series = NDArray[np.float64]


@dataclass(frozen=True)
class ChangePoint:
    """A shift in a series: ``series[index]`` is the first value after it."""

    index: int
    before: float
    """Mean of the segment before (from the previous change point)."""
    after: float
    """Mean of the segment after (up to the next change point)."""
    magnitude: float
    """(after - before) / before: +0.2 is 20 % higher; 0 when ``before`` is 0."""
    pvalue: float
    """Two-sided Student's t-test between the two segments."""


def change_points(
    series: Sequence[float],
    *,
    window: int = 30,
    max_pvalue: float = 0.001,
    min_magnitude: float = 0.0,
) -> list[ChangePoint]:
    """The change points of ``series`` (oldest first), in order, each with ``pvalue`` at most
    ``max_pvalue`` and ``|magnitude|`` at least ``min_magnitude``.

    ``window`` is the number of points E-divisive looks at together (at least 2). Raises
    ValueError naming the parameter or the position of a value that is not finite.
    """
    if isinstance(window, bool) or not isinstance(window, int) or window < 2:
        raise ValueError(f"window must be an integer number of points >= 2, got {window!r}")
    if not 0.0 < max_pvalue <= 1.0:
        raise ValueError(f"max_pvalue must be in (0, 1], got {max_pvalue}")
    if not min_magnitude >= 0.0:
        raise ValueError(f"min_magnitude must be >= 0, got {min_magnitude}")
    values = np.asarray(series, dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        raise ValueError(f"series[{bad[0]}] is {values[bad[0]]}, not a finite number")
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        # constant segments make the t-test warn about precision; their p-value is handled
        warnings.simplefilter("ignore", RuntimeWarning)
        weak = _split(values, window, _relaxed(max_pvalue))
        return _merge(values, weak, max_pvalue, min_magnitude)


def _relaxed(max_pvalue: float) -> float:
    """The first-pass threshold: loose enough that the merge step has candidates to judge."""
    if max_pvalue < 0.05:
        return max_pvalue * 10
    if max_pvalue < 0.5:
        return max_pvalue * 2
    return max_pvalue


def _split(values: Series, window: int, max_pvalue: float) -> list[int]:
    """Weak change points: the union of E-divisive's over overlapping windows."""
    found: set[int] = set()
    for start in range(0, len(values), window // 2):
        window_values = values[start : start + window]
        found.update(start + index for index in _e_divisive(window_values, max_pvalue))
    return sorted(found)


def _e_divisive(values: Series, max_pvalue: float) -> list[int]:
    """Change points of one window (sorted): the best split of any interval between those
    found so far, taken while its t-test within that interval passes ``max_pvalue``."""
    points: list[int] = []
    while True:
        best: tuple[float, int, int, int] | None = None
        for start, stop in itertools.pairwise([0, *points, len(values)]):
            if stop - start < 2:
                continue
            qhat, split = _best_split(values[start:stop])
            if best is None or qhat > best[0]:
                best = (qhat, start + split, start, stop)
        if best is None:
            return points
        _, index, start, stop = best
        if _t_test(values[start:index], values[index:stop])[1] > max_pvalue:
            return points
        points = sorted([*points, index])


def _best_split(values: Series) -> tuple[float, int]:
    """The largest Q-hat over every split of ``values`` into a left part ``X = [0, tau)`` and a
    right part ``Y = [tau, kappa)``, and the ``tau`` that reaches it.

    Q-hat(X, Y) = 2/(n+m) sum|X_i - Y_j| - 2m/((n+m)(n-1)) sum_{i<k}|X_i - X_k|
    - 2n/((n+m)(m-1)) sum_{j<k}|Y_j - Y_k| for n = |X|, m = |Y| (a term is zero when its side
    holds one point). Every block sum of the distance matrix comes from one 2-D prefix sum.
    """
    size = len(values)
    prefix = np.zeros((size + 1, size + 1))
    prefix[1:, 1:] = np.abs(values[:, None] - values[None, :]).cumsum(axis=0).cumsum(axis=1)
    tau = np.arange(1, size)[:, None]
    kappa = np.arange(2, size + 1)[None, :]
    n, m = tau, kappa - tau
    within_left = prefix[tau, tau]  # every ordered pair, so twice the sum over i < k
    between = prefix[tau, kappa] - within_left
    within_right = prefix[kappa, kappa] - 2 * prefix[tau, kappa] + within_left
    left_term = np.divide(m * within_left, n - 1, out=np.zeros(between.shape), where=n > 1)
    right_term = np.divide(n * within_right, m - 1, out=np.zeros(between.shape), where=m > 1)
    qhat = np.where(m > 0, (2 * between - left_term - right_term) / kappa, -np.inf)
    row, column = np.unravel_index(int(np.argmax(qhat)), qhat.shape)
    return float(qhat[row, column]), int(row) + 1


@dataclass(frozen=True)
class _Verdict:
    """A change point tested between its neighbours, with what the merge step weighs."""

    point: ChangePoint
    strength: float
    """|t| of the test (0 when it cannot tell)."""
    testable: bool
    """Whether its two sides hold enough points for a t-test at all."""


_TESTABLE = 3
"""The fewest points a t-test between two sides can judge (one degree of freedom)."""


def _t_test(left: Series, right: Series) -> tuple[float, float]:
    """|t| and the two-sided p-value of Student's t-test (pooled variance) between the sides;
    (0, 1) when it cannot tell (too few points, or both sides constant and equal)."""
    if len(left) + len(right) < _TESTABLE:
        return 0.0, 1.0
    # Imported here, not at the top: the server imports this module at start, and SciPy's
    # stats costs every server start most of a second (tests/unit/test_server_start_imports.py).
    from scipy import stats

    # the same test as stats.ttest_ind(left, right), without its per-call overhead
    result = stats.ttest_ind_from_stats(
        np.mean(left), _deviation(left), len(left), np.mean(right), _deviation(right), len(right)
    )
    statistic, pvalue = float(result.statistic), float(result.pvalue)
    if math.isnan(pvalue):
        return 0.0, 1.0
    return abs(statistic), pvalue


def _deviation(values: Series) -> float:
    """Sample standard deviation; a single point adds nothing to the pooled variance."""
    return float(np.std(values, ddof=1)) if len(values) > 1 else 0.0


def _judge(values: Series, points: list[int]) -> list[_Verdict]:
    """Each change point tested between its neighbours."""
    edges = [0, *points, len(values)]
    verdicts = []
    for before_start, index, after_stop in zip(edges, edges[1:], edges[2:], strict=False):
        left, right = values[before_start:index], values[index:after_stop]
        before, after = float(np.mean(left)), float(np.mean(right))
        magnitude = 0.0 if before == 0 else (after - before) / before
        strength, pvalue = _t_test(left, right)
        point = ChangePoint(index, before, after, magnitude, pvalue)
        verdicts.append(_Verdict(point, strength, after_stop - before_start >= _TESTABLE))
    return verdicts


def _merge(
    values: Series, points: list[int], max_pvalue: float, min_magnitude: float
) -> list[ChangePoint]:
    """Drop the weakest change point until every one left passes both thresholds.

    While some p-value is above ``max_pvalue``, the weakest of those goes: the one with the
    smallest |t|, so that a real step with few points after it (a large |t| but, with few
    degrees of freedom, a p-value not yet small) outlives a spurious neighbour that fenced it
    in; one that cannot be tested at all yet (a single point on each side) goes last. Then, while
    some change is smaller than ``min_magnitude``, the smallest goes.
    """
    while True:
        verdicts = _judge(values, points)
        failing = [verdict for verdict in verdicts if verdict.point.pvalue > max_pvalue]
        if failing:
            weakest = min(failing, key=lambda verdict: (not verdict.testable, verdict.strength))
        else:
            small = [
                verdict for verdict in verdicts if abs(verdict.point.magnitude) < min_magnitude
            ]
            if not small:
                return [verdict.point for verdict in verdicts]
            weakest = min(small, key=lambda verdict: abs(verdict.point.magnitude))
        points.remove(weakest.point.index)
