"""Boundary limits: the baseline and the lower and upper limits a model draws from a history.

Each test computes as Bencher's does (``lib/bencher_boundary``):

- ``static``: the boundaries are the limits; no baseline.
- ``percentage``: baseline = mean; limits = mean -/+ mean * boundary.
- ``z_score``: a normal distribution with the history's mean and *population* standard
  deviation (divided by n, as Bencher); upper limit = its quantile at the upper boundary;
  lower limit = the quantile at the lower boundary mirrored through the mean
  (2 * mean - quantile).
- ``t_test``: the same with Student's t distribution, n - 1 degrees of freedom, located at the
  mean and scaled by the population standard deviation.
- ``log_normal``: a log-normal distribution fitted to the logarithms of the history (their mean
  is the location, their population standard deviation the scale); baseline = exp(location),
  the median; upper limit = its quantile; lower limit = 2 * baseline - quantile.
- ``iqr``: quartiles with linear interpolation between closest ranks; baseline = median;
  limits = median -/+ (q3 - q1) * boundary.
- ``delta_iqr``: quartiles of the relative changes between neighbouring values, taken newest
  to oldest as Bencher does (|older - newer| / newer); baseline = median of the values;
  limits = median -/+ median * (delta q3 - delta q1) * boundary.

The sample sizes a test needs: static none, percentage and iqr one value, z_score, t_test,
log_normal and delta_iqr two; z_score, t_test and log_normal also need a non-zero variance,
log_normal only positive values. With fewer there are no limits (and so no alert).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray
from scipy import special

from benchrunner.detection.models import Model, TestKind

Side = Literal["lower", "upper"]


@dataclass(frozen=True)
class Limits:
    """A boundary: the baseline (None for ``static``) and a limit per side (None: no limit)."""

    baseline: float | None
    lower_limit: float | None
    upper_limit: float | None


def limits(model: Model, history: Sequence[float]) -> Limits | None:
    """The limits ``model`` draws from ``history``, or None when it draws none.

    ``history`` holds the values of one branch, testbed, benchmark and measure, oldest first,
    already cut by the caller to the model's window and never holding the value being judged;
    only its newest ``max_sample_size`` values are used. None when the history is shorter than
    ``min_sample_size`` or than the test needs, when a statistic is not finite (zero variance,
    a non-positive value for ``log_normal``), for a model with no boundary, and for
    ``change_point``, whose verdicts come from ``change_points`` instead.
    """
    lower, upper = model.lower_boundary, model.upper_boundary
    if model.test == TestKind.CHANGE_POINT or (lower is None and upper is None):
        return None
    values = np.asarray(history, dtype=np.float64)
    if model.max_sample_size is not None:
        values = values[len(values) - min(len(values), model.max_sample_size) :]
    if model.min_sample_size is not None and len(values) < model.min_sample_size:
        return None
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return _DRAW[TestKind(model.test)](values, lower, upper)


def outside(limits: Limits, value: float) -> Side | None:
    """The side whose limit ``value`` is strictly beyond, or None (a value at a limit is in)."""
    if limits.lower_limit is not None and value < limits.lower_limit:
        return "lower"
    if limits.upper_limit is not None and value > limits.upper_limit:
        return "upper"
    return None


Values = NDArray[np.float64]


def _static(_: Values, lower: float | None, upper: float | None) -> Limits | None:
    return Limits(None, lower, upper)


def _percentage(values: Values, lower: float | None, upper: float | None) -> Limits | None:
    mean = _mean(values)
    if mean is None:
        return None
    return Limits(
        mean,
        None if lower is None else mean - mean * lower,
        None if upper is None else mean + mean * upper,
    )


def _z_score(values: Values, lower: float | None, upper: float | None) -> Limits | None:
    fit = _mean_and_deviation(values)
    if fit is None:
        return None
    mean, deviation = fit
    return _mirrored(lambda q: special.ndtri(q) * deviation + mean, mean, lower, upper)


def _t_test(values: Values, lower: float | None, upper: float | None) -> Limits | None:
    fit = _mean_and_deviation(values)
    if fit is None:
        return None
    mean, deviation = fit
    df = len(values) - 1
    return _mirrored(lambda q: special.stdtrit(df, q) * deviation + mean, mean, lower, upper)


def _log_normal(values: Values, lower: float | None, upper: float | None) -> Limits | None:
    fit = _mean_and_deviation(np.log(values))
    if fit is None:
        return None
    location, scale = fit
    median = float(np.exp(location))
    return _mirrored(lambda q: np.exp(scale * special.ndtri(q)) * median, median, lower, upper)


def _iqr(values: Values, lower: float | None, upper: float | None) -> Limits | None:
    quartiles = _quartiles(values)
    if quartiles is None:
        return None
    q1, median, q3 = quartiles
    spread = q3 - q1
    return Limits(
        median,
        None if lower is None else median - spread * lower,
        None if upper is None else median + spread * upper,
    )


def _delta_iqr(values: Values, lower: float | None, upper: float | None) -> Limits | None:
    if len(values) < 2:
        return None
    quartiles = _quartiles(values)
    newest_first = values[::-1]
    deltas = _quartiles(np.abs((newest_first[1:] - newest_first[:-1]) / newest_first[:-1]))
    if quartiles is None or deltas is None:
        return None
    median = quartiles[1]
    spread = median * (deltas[2] - deltas[0])
    return Limits(
        median,
        None if lower is None else median - spread * lower,
        None if upper is None else median + spread * upper,
    )


_DRAW = {
    TestKind.STATIC: _static,
    TestKind.PERCENTAGE: _percentage,
    TestKind.Z_SCORE: _z_score,
    TestKind.T_TEST: _t_test,
    TestKind.LOG_NORMAL: _log_normal,
    TestKind.IQR: _iqr,
    TestKind.DELTA_IQR: _delta_iqr,
}


Quantile = Callable[[float], float]
"""A distribution's quantile function (percent point function), for probabilities in (0, 1).

Each is SciPy's own ``ppf`` arithmetic written out at the ufunc level (``scipy.special``):
``stats.norm(loc, scale).ppf(q)`` is ``ndtri(q) * scale + loc``, ``stats.t(df, loc,
scale).ppf(q)`` is ``stdtrit(df, q) * scale + loc`` and ``stats.lognorm(s, scale=m).ppf(q)`` is
``exp(s * ndtri(q)) * m``, bit for bit (the unit tests compare them). A frozen SciPy
distribution costs about a millisecond to build, which a report of 3,000 metrics would pay
3,000 times; the boundaries' range [0.5, 1.0) keeps ``q`` off the edges SciPy treats apart."""


def _mirrored(
    quantile: Quantile, baseline: float, lower: float | None, upper: float | None
) -> Limits | None:
    """Limits from a distribution's quantiles; the lower one mirrors the quantile at the lower
    boundary through the baseline, as Bencher does (so both sides use the upper tail)."""
    lower_limit = None if lower is None else 2.0 * baseline - float(quantile(lower))
    upper_limit = None if upper is None else float(quantile(upper))
    if not all(np.isfinite(x) for x in (lower_limit, upper_limit) if x is not None):
        return None
    return Limits(baseline, lower_limit, upper_limit)


def _mean(values: Values) -> float | None:
    if len(values) == 0:
        return None
    mean = float(np.mean(values))
    return mean if np.isfinite(mean) else None


def _mean_and_deviation(values: Values) -> tuple[float, float] | None:
    """Mean and population standard deviation; None for fewer than two values, a zero
    deviation (no distribution to draw from) or anything not finite."""
    mean = _mean(values)
    if mean is None or len(values) < 2:
        return None
    deviation = float(np.std(values, ddof=0))
    if deviation == 0.0 or not np.isfinite(deviation):
        return None
    return mean, deviation


def _quartiles(values: Values) -> tuple[float, float, float] | None:
    if len(values) == 0:
        return None
    q1, q2, q3 = (float(q) for q in np.percentile(values, [25, 50, 75], method="linear"))
    if not all(np.isfinite(q) for q in (q1, q2, q3)):
        return None
    return q1, q2, q3
