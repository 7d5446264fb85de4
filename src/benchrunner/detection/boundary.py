"""Boundary limits: the baseline and the lower and upper limits a model draws from a history.

Each test computes as Bencher v0.6.12's does (``lib/bencher_boundary``), over the history taken
newest first as Bencher queries it:

- ``static``: the boundaries are the limits; no baseline.
- ``percentage``: baseline = mean; limits = mean -/+ mean * boundary.
- ``z_score``: a normal distribution with the history's mean and *sample* standard deviation
  (its variance divided by n - 1); upper limit = its quantile at the upper boundary; lower
  limit = the quantile at the lower boundary mirrored through the mean (2 * mean - quantile).
- ``t_test``: a prediction interval: Student's t distribution with n - 1 degrees of freedom,
  located at the mean and scaled by the sample standard deviation * sqrt(1 + 1/n); limits as
  ``z_score``'s.
- ``log_normal``: a log-normal distribution fitted to the logarithms of the history (their mean
  is the location, their sample standard deviation the scale); baseline = exp(location), the
  median; upper limit = its quantile; lower limit = 2 * baseline - quantile.
- ``iqr``: quartiles with linear interpolation between closest ranks; baseline = median;
  limits = median -/+ (q3 - q1) * boundary.
- ``delta_iqr``: quartiles of the relative changes between neighbouring values, newest first
  (|older - newer| / newer); baseline = median of the values; limits = median -/+ median *
  (delta q3 - delta q1) * boundary.

The sample sizes a test needs: every test one value at least (a ``static`` threshold too: no
limits until its series has a value), z_score, t_test, log_normal and delta_iqr two; z_score,
t_test and log_normal also need a non-zero variance, log_normal only positive values. With
fewer there are no limits (and so no alert).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray
from scipy import special

from benchrunner.detection.models import Model, TestKind

Side = Literal["lower", "upper"]
Values = NDArray[np.float64]


@dataclass(frozen=True)
class Limits:
    """A boundary: the baseline (None for ``static``) and a limit per side (None: no limit)."""

    baseline: float | None
    lower_limit: float | None
    upper_limit: float | None


@dataclass(frozen=True)
class Quartiles:
    q1: float
    q2: float
    q3: float

    def spread(self, boundary: float) -> float:
        """The inter-quartile range times ``boundary``."""
        return (self.q3 - self.q1) * boundary


def limits(model: Model, history: Sequence[float]) -> Limits | None:
    """``limits_many`` of one history."""
    [found] = limits_many(model, [history])
    return found


def limits_many(model: Model, histories: Sequence[Sequence[float]]) -> list[Limits | None]:
    """The limits ``model`` draws from each history, or None where it draws none.

    A history holds the values of one branch, testbed, benchmark and measure, oldest first,
    already cut by the caller to the model's window and never holding the value being judged;
    only its newest ``max_sample_size`` values are used. None when the history is empty,
    shorter than ``min_sample_size`` or than the test needs, when a statistic is not finite
    (zero variance, a non-positive value for ``log_normal``), for a model with no boundary, and
    for ``change_point``, whose verdicts come from ``change_points_many`` instead.

    The histories of one length (after the cut; a report's series mostly share it) are drawn
    together from a matrix of them, newest first: a report of 3,000 metrics is a few array
    operations, not 3,000 calls. A history's answer does not depend on the others drawn with
    it.
    """
    lower, upper = model.lower_boundary, model.upper_boundary
    if model.test == TestKind.CHANGE_POINT or (lower is None and upper is None):
        return [None] * len(histories)
    test = TestKind(model.test)
    found: list[Limits | None] = [None] * len(histories)
    by_length: dict[int, list[int]] = {}
    for position, history in enumerate(histories):
        size = len(history)
        if model.max_sample_size is not None:
            size = min(size, model.max_sample_size)
        if size == 0 or (model.min_sample_size is not None and size < model.min_sample_size):
            continue
        by_length.setdefault(size, []).append(position)
    for size, positions in by_length.items():
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            drawn = _draw(test, [histories[p] for p in positions], size, lower, upper)
        for position, limits_drawn in zip(positions, drawn, strict=True):
            found[position] = limits_drawn
    return found


def _draw(
    test: TestKind,
    histories: list[Sequence[float]],
    size: int,
    lower: float | None,
    upper: float | None,
) -> list[Limits | None]:
    """The limits of histories of at least ``size`` values, each cut to its newest ``size``:
    in one pass over a matrix of them for the tests ``_draw_rows`` draws, one by one for those
    whose logarithms and quantiles NumPy may compute differently for a matrix and for one
    history."""
    draw_one = _DRAW_ONE.get(test)
    if draw_one is not None:
        return [
            draw_one(np.asarray(history, dtype=np.float64)[::-1][:size], lower, upper)
            for history in histories
        ]
    newest_first = np.array(
        [list(reversed(history[len(history) - size :])) for history in histories],
        dtype=np.float64,
    ).reshape(len(histories), size)
    return _draw_rows(test, newest_first, lower, upper)


def _draw_rows(
    test: TestKind, rows: NDArray[np.float64], lower: float | None, upper: float | None
) -> list[Limits | None]:
    """The limits of each row of ``rows`` (histories of one length, newest first) as
    ``limits_many`` describes, statistic by statistic."""
    count, size = rows.shape
    if test is TestKind.STATIC:
        return [static_limits(lower, upper)] * count
    centers = rows.sum(axis=1) / size  # each row's sum, pairwise as np.sum of the row alone
    usable = np.isfinite(centers)
    if test is TestKind.PERCENTAGE:
        return [
            percentage_limits(center, lower, upper) if ok else None
            for center, ok in zip(centers.tolist(), usable.tolist(), strict=True)
        ]
    if size < 2:
        return [None] * count
    variances = ((rows - centers[:, None]) ** 2).sum(axis=1) / (size - 1)
    usable &= np.isfinite(variances) & (variances != 0.0)
    spreads = np.sqrt(np.where(usable, variances, 1.0))
    usable &= np.isfinite(spreads)
    if test is TestKind.Z_SCORE:
        scales, quantile = spreads, special.ndtri
    else:
        scales = spreads * math.sqrt(1.0 + 1.0 / size)

        def quantile(q: float) -> float:
            return float(special.stdtrit(size - 1, q))

    lower_limits = None if lower is None else 2.0 * centers - (quantile(lower) * scales + centers)
    upper_limits = None if upper is None else quantile(upper) * scales + centers
    for side in (lower_limits, upper_limits):
        if side is not None:
            usable &= np.isfinite(side)
    lows = [None] * count if lower_limits is None else lower_limits.tolist()
    highs = [None] * count if upper_limits is None else upper_limits.tolist()
    return [
        Limits(center, low, high) if ok else None
        for center, low, high, ok in zip(
            centers.tolist(), lows, highs, usable.tolist(), strict=True
        )
    ]


def outside(limits: Limits, value: float) -> Side | None:
    """The side whose limit ``value`` is strictly beyond, or None (a value at a limit is in)."""
    if limits.lower_limit is not None and value < limits.lower_limit:
        return "lower"
    if limits.upper_limit is not None and value > limits.upper_limit:
        return "upper"
    return None


# The statistics of a history (newest first, where the order matters).


def mean(values: Values) -> float | None:
    """The arithmetic mean; None for no values or a mean that is not finite."""
    if len(values) == 0:
        return None
    result = float(np.sum(values) / len(values))
    return result if math.isfinite(result) else None


def variance(location: float, values: Values) -> float | None:
    """The sample variance about ``location`` (squared deviations divided by n - 1); None for
    fewer than two values or a variance that is not finite."""
    if len(values) < 2:
        return None
    result = float(np.sum((values - location) ** 2) / (len(values) - 1))
    return result if math.isfinite(result) else None


def deviation(location: float, values: Values) -> float | None:
    """The square root of ``variance``; None also when it is zero (no distribution to draw)."""
    spread = variance(location, values)
    if spread is None or spread == 0.0:
        return None
    result = math.sqrt(spread)
    return result if math.isfinite(result) else None


def log_fit(values: Values) -> tuple[float, float] | None:
    """The location and scale of a log-normal distribution: the mean of the values' natural
    logarithms and their ``deviation``; None when either is undefined (a value <= 0)."""
    logs = np.log(values)
    location = mean(logs)
    if location is None:
        return None
    scale = deviation(location, logs)
    return None if scale is None else (location, scale)


def quartiles(values: Values) -> Quartiles | None:
    """The quartiles, linearly interpolated between closest ranks; None for no values."""
    if len(values) == 0:
        return None
    q1, q2, q3 = (float(q) for q in np.percentile(values, [25, 50, 75], method="linear"))
    if not all(math.isfinite(q) for q in (q1, q2, q3)):
        return None
    return Quartiles(q1, q2, q3)


def delta_quartiles(newest_first: Values) -> Quartiles | None:
    """The quartiles of the relative changes |next - value| / value between neighbours, in the
    order given (newest first); None for fewer than two values."""
    if len(newest_first) < 2:
        return None
    changes = np.abs((newest_first[1:] - newest_first[:-1]) / newest_first[:-1])
    return quartiles(changes)


# Limits from those statistics.


def static_limits(lower: float | None, upper: float | None) -> Limits:
    return Limits(None, lower, upper)


def percentage_limits(center: float, lower: float | None, upper: float | None) -> Limits:
    return Limits(
        center,
        None if lower is None else center - center * lower,
        None if upper is None else center + center * upper,
    )


def log_normal_limits(
    location: float, scale: float, lower: float | None, upper: float | None
) -> Limits | None:
    """``log_normal``'s limits: the quantiles ``exp(location + scale * ndtri(q))`` about the
    median ``exp(location)``."""
    median = math.exp(location)
    return _mirrored(lambda q: np.exp(location + scale * special.ndtri(q)), median, lower, upper)


def iqr_limits(found: Quartiles, lower: float | None, upper: float | None) -> Limits:
    return Limits(
        found.q2,
        None if lower is None else found.q2 - found.spread(lower),
        None if upper is None else found.q2 + found.spread(upper),
    )


def delta_iqr_limits(
    found: Quartiles, deltas: Quartiles, lower: float | None, upper: float | None
) -> Limits:
    median = found.q2
    return Limits(
        median,
        None if lower is None else median - median * deltas.spread(lower),
        None if upper is None else median + median * deltas.spread(upper),
    )


def _log_normal(values: Values, lower: float | None, upper: float | None) -> Limits | None:
    fit = log_fit(values)
    return None if fit is None else log_normal_limits(*fit, lower, upper)


def _iqr(values: Values, lower: float | None, upper: float | None) -> Limits | None:
    found = quartiles(values)
    return None if found is None else iqr_limits(found, lower, upper)


def _delta_iqr(values: Values, lower: float | None, upper: float | None) -> Limits | None:
    found, deltas = quartiles(values), delta_quartiles(values)
    if found is None or deltas is None:
        return None
    return delta_iqr_limits(found, deltas, lower, upper)


_DRAW_ONE = {
    TestKind.LOG_NORMAL: _log_normal,
    TestKind.IQR: _iqr,
    TestKind.DELTA_IQR: _delta_iqr,
}
"""The tests drawn one history at a time (``_draw``); the others are ``_draw_rows``'s."""


Quantile = Callable[[float], float]
"""A distribution's quantile function (percent point function), for probabilities in (0, 1),
written out at the ufunc level (``scipy.special``): a frozen SciPy distribution costs about a
millisecond to build, which a report of 3,000 metrics would pay 3,000 times; the boundaries'
range [0.5, 1.0) keeps ``q`` off the edges SciPy treats apart."""


def _mirrored(
    quantile: Quantile, baseline: float, lower: float | None, upper: float | None
) -> Limits | None:
    """Limits from a distribution's quantiles; the lower one mirrors the quantile at the lower
    boundary through the baseline, as Bencher does (so both sides use the upper tail)."""
    lower_limit = None if lower is None else 2.0 * baseline - float(quantile(lower))
    upper_limit = None if upper is None else float(quantile(upper))
    if not all(math.isfinite(x) for x in (lower_limit, upper_limit) if x is not None):
        return None
    return Limits(baseline, lower_limit, upper_limit)
