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

import functools
import itertools
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


def _check_parameters(window: int, max_pvalue: float, min_magnitude: float) -> None:
    """Raise ValueError naming the first parameter out of its range."""
    if isinstance(window, bool) or not isinstance(window, int) or window < 2:
        raise ValueError(f"window must be an integer number of points >= 2, got {window!r}")
    if not 0.0 < max_pvalue <= 1.0:
        raise ValueError(f"max_pvalue must be in (0, 1], got {max_pvalue}")
    if not min_magnitude >= 0.0:
        raise ValueError(f"min_magnitude must be >= 0, got {min_magnitude}")


BATCH_ROWS = 512
"""Windows weighed together at most (``change_points_many``): a window of 30 points costs
about 70 KB of arrays."""


def change_points_many(
    many: Sequence[Sequence[float]],
    *,
    window: int = 30,
    max_pvalue: float = 0.001,
    min_magnitude: float = 0.0,
) -> list[list[ChangePoint]]:
    """The change points of each series (oldest first), in order, each with ``pvalue`` at most
    ``max_pvalue`` and ``|magnitude|`` at least ``min_magnitude``.

    ``window`` is the number of points E-divisive looks at together (at least 2). Raises
    ValueError naming the parameter, or the series and position of a value that is not finite.

    The work most series need is done for all of them at once: every window's best split
    weighed in batches across the series, and its t-test (``_t_tests``) for all windows of one
    size and split together. A window whose best split fails that test has no change point
    (``_e_divisive`` stops there), and a series none of whose windows has one has none; only
    the other windows and series go on one by one. A series' answer does not depend on the
    others judged with it."""
    _check_parameters(window, max_pvalue, min_magnitude)
    arrays = [np.asarray(series, dtype=np.float64) for series in many]
    for number, values in enumerate(arrays):
        bad = np.flatnonzero(~np.isfinite(values))
        if bad.size:
            raise ValueError(
                f"value {bad[0]} of series {number} is {values[bad[0]]}, not a finite number"
            )
    relaxed = _relaxed(max_pvalue)
    step = window // 2
    # every window of every series: (series, start, values)
    windows = [
        (position, start, values[start : start + window])
        for position, values in enumerate(arrays)
        for start in range(0, len(values), step)
    ]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        # constant segments make the t-test warn about precision; their p-value is handled
        warnings.simplefilter("ignore", RuntimeWarning)
        whole = _whole_splits([w for _, _, w in windows])
        passing = _first_tests_pass(windows, whole, relaxed)
        weak: list[set[int]] = [set() for _ in arrays]
        for (position, start, window_values), split, passes in zip(
            windows, whole, passing, strict=True
        ):
            if passes:
                found = _e_divisive(window_values, relaxed, split)
                weak[position].update(start + index for index in found)
        return [
            _merge(values, sorted(points), max_pvalue, min_magnitude) if points else []
            for values, points in zip(arrays, weak, strict=True)
        ]


def _first_tests_pass(
    windows: list[tuple[int, int, Series]], whole: list[Split | None], max_pvalue: float
) -> list[bool]:
    """Whether each window's best split passes its t-test (``_e_divisive``'s first step):
    the windows of one size and split tested together."""
    passes = [False] * len(windows)
    groups: dict[tuple[int, int], list[int]] = {}
    for position, ((_, _, window_values), best) in enumerate(zip(windows, whole, strict=True)):
        if best is not None:
            groups.setdefault((len(window_values), best[1]), []).append(position)
    for (_, tau), positions in groups.items():
        batch = np.stack([windows[position][2] for position in positions])
        _, pvalues = _t_tests(batch[:, :tau], batch[:, tau:])
        for position, pvalue in zip(positions, pvalues.tolist(), strict=True):
            passes[position] = not pvalue > max_pvalue
    return passes


def _t_tests(
    left: NDArray[np.float64], right: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """|t| and the two-sided p-value of Student's t-test (pooled variance) between each row's
    two sides; (0, 1) where it cannot tell (too few points, or both sides constant and equal).
    One test is a batch of one row.

    The same arithmetic as ``scipy.stats.ttest_ind_from_stats`` on each side's mean and sample
    standard deviation, to the last bit, without its per-call overhead (a look-back runs it
    some 15,000 times): the p-value is 2 * ``stdtr(df, -|t|)``; a row's sums are the sums of
    the row alone."""
    n1, n2 = left.shape[1], right.shape[1]
    if n1 + n2 < _TESTABLE:
        return np.zeros(left.shape[0]), np.ones(left.shape[0])
    # Imported here, not at the top: the server imports this module at start, and SciPy costs
    # every server start most of a second.
    from scipy.special import stdtr

    mean1, variance1 = _moments(left)
    mean2, variance2 = _moments(right)
    df = n1 + n2 - 2.0
    pooled = ((n1 - 1) * variance1 + (n2 - 1) * variance2) / df
    error = np.sqrt(pooled * (1.0 / n1 + 1.0 / n2))
    # over a zero error: +-inf, or NaN for 0 / 0 (the caller silences NumPy's warnings)
    strengths = np.abs((mean1 - mean2) / error)
    pvalues: NDArray[np.float64] = 2 * stdtr(df, -strengths)
    cannot_tell = np.isnan(pvalues)  # constant and equal sides, or sums past the largest float
    if cannot_tell.any():
        strengths[cannot_tell], pvalues[cannot_tell] = 0.0, 1.0
    return strengths, pvalues


def _moments(rows: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Each row's mean and sample variance as ``np.mean`` and ``np.std(ddof=1) ** 2`` compute
    them (the same sums in the same order); a single point adds nothing to the pooled
    variance."""
    size = rows.shape[1]
    sums = np.add.reduce(rows, axis=1)
    means = sums / size
    if size == 1:
        return means, np.zeros(rows.shape[0])
    deviations = rows - means[:, None]
    deviation = np.sqrt(np.add.reduce(deviations * deviations, axis=1) / (size - 1))
    return means, deviation * deviation


def _relaxed(max_pvalue: float) -> float:
    """The first-pass threshold: loose enough that the merge step has candidates to judge."""
    if max_pvalue < 0.05:
        return max_pvalue * 10
    if max_pvalue < 0.5:
        return max_pvalue * 2
    return max_pvalue


Split = tuple[float, int]
"""The largest Q-hat of an interval and the split that reaches it (``_best_split``)."""


def _whole_splits(windows: list[Series]) -> list[Split | None]:
    """Each window's best split (None below two points), windows of one size weighed together
    in batches of at most ``BATCH_ROWS``."""
    found: list[Split | None] = [None] * len(windows)
    sizes: dict[int, list[int]] = {}
    for position, window_values in enumerate(windows):
        if len(window_values) >= 2:
            sizes.setdefault(len(window_values), []).append(position)
    for positions in sizes.values():
        for start in range(0, len(positions), BATCH_ROWS):
            chunk = positions[start : start + BATCH_ROWS]
            batch = np.stack([windows[position] for position in chunk])
            for position, split in zip(chunk, _best_splits(batch), strict=True):
                found[position] = split
    return found


def _e_divisive(values: Series, max_pvalue: float, whole: Split | None) -> list[int]:
    """Change points of one window (sorted): the best split of any interval between those
    found so far, taken while its t-test within that interval passes ``max_pvalue``.
    ``whole``: the best split of the whole window. An interval's best split is weighed once,
    however many rounds it stays unsplit."""
    points: list[int] = []
    splits: dict[tuple[int, int], Split] = {}
    if whole is not None:
        splits[0, len(values)] = whole
    while True:
        best: tuple[float, int, int, int] | None = None
        for start, stop in itertools.pairwise([0, *points, len(values)]):
            if stop - start < 2:
                continue
            if (start, stop) not in splits:
                splits[start, stop] = _best_split(values[start:stop])
            qhat, split = splits[start, stop]
            if best is None or qhat > best[0]:
                best = (qhat, start + split, start, stop)
        if best is None:
            return points
        _, index, start, stop = best
        _, pvalues = _t_tests(values[None, start:index], values[None, index:stop])
        if pvalues[0] > max_pvalue:
            return points
        points = sorted([*points, index])


def _best_split(values: Series) -> Split:
    """The largest Q-hat over every split of ``values`` into a left part ``X = [0, tau)`` and a
    right part ``Y = [tau, kappa)``, and the ``tau`` that reaches it.

    Q-hat(X, Y) = 2/(n+m) sum|X_i - Y_j| - 2m/((n+m)(n-1)) sum_{i<k}|X_i - X_k|
    - 2n/((n+m)(m-1)) sum_{j<k}|Y_j - Y_k| for n = |X|, m = |Y| (a term is zero when its side
    holds one point).
    """
    [found] = _best_splits(values[None, :])
    return found


def _best_splits(batch: NDArray[np.float64]) -> list[Split]:
    """``_best_split`` of each row of ``batch`` (intervals of one size), in one pass: the same
    arithmetic, entry by entry, as one row alone.

    Every block sum of a row's distance matrix comes from one 2-D prefix sum ``prefix[a, b]``
    (the sum over rows <= a and columns <= b): the sums over [0, tau) squared are its
    diagonal, those over [0, tau) x [0, kappa) one slice of it.
    """
    rows, size = batch.shape
    grid = _grid(size)
    distances = np.abs(batch[:, :, None] - batch[:, None, :])
    prefix = distances.cumsum(axis=1).cumsum(axis=2)
    diagonal = prefix.diagonal(axis1=1, axis2=2)
    within_left = diagonal[:, :-1, None]  # every ordered pair, so twice the sum over i < k
    block = prefix[:, :-1, 1:]  # [0, tau) x [0, kappa) for tau = 1.., kappa = 2..
    between = block - within_left
    within_right = diagonal[:, None, 1:] - 2 * block + within_left
    left_term = np.zeros(block.shape)  # zero at tau = 1: one point on the left
    left_term[:, 1:] = grid.m[1:] * within_left[:, 1:] / grid.n_less_one[1:]
    right_term = np.divide(
        grid.n * within_right, grid.m_less_one, out=np.zeros(block.shape), where=grid.m_above_one
    )
    qhat = np.where(grid.m_positive, (2 * between - left_term - right_term) / grid.kappa, -np.inf)
    flat = qhat.reshape(rows, -1)
    best = flat.argmax(axis=1)
    width = size - 1
    return [
        (float(flat[row, index]), int(index) // width + 1)
        for row, index in enumerate(best.tolist())
    ]


@dataclass(frozen=True)
class _Grid:
    """The (tau, kappa) grid of one interval size, as ``_best_split`` weighs it: rows are
    tau = 1 .. size - 1, columns kappa = 2 .. size."""

    kappa: NDArray[np.int64]
    n: NDArray[np.int64]
    n_less_one: NDArray[np.int64]
    m: NDArray[np.int64]
    m_less_one: NDArray[np.int64]
    m_positive: NDArray[np.bool_]
    m_above_one: NDArray[np.bool_]


@functools.cache
def _grid(size: int) -> _Grid:
    tau = np.arange(1, size)[:, None]
    kappa = np.arange(2, size + 1)[None, :]
    m = kappa - tau
    return _Grid(kappa, tau, tau - 1, m, m - 1, m > 0, m > 1)


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


def _judge(values: Series, points: list[int]) -> list[_Verdict]:
    """Each change point tested between its neighbours."""
    edges = [0, *points, len(values)]
    verdicts = []
    for before_start, index, after_stop in zip(edges, edges[1:], edges[2:], strict=False):
        left, right = values[before_start:index], values[index:after_stop]
        before, after = float(np.mean(left)), float(np.mean(right))
        magnitude = 0.0 if before == 0 else (after - before) / before
        strengths, pvalues = _t_tests(left[None, :], right[None, :])
        point = ChangePoint(index, before, after, magnitude, float(pvalues[0]))
        testable = after_stop - before_start >= _TESTABLE
        verdicts.append(_Verdict(point, float(strengths[0]), testable))
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
