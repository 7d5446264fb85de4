"""The ``samples`` test: a new report's samples against the baseline window's, as distributions.

Two questions, both needed for a verdict of **different**:

- is there a shift at all? A two-sided Mann-Whitney U rank test (no assumption of normality,
  robust to a stray slow round) with p-value at most ``max_pvalue``;
- is it as large as the smallest change worth an alert? The Hodges-Lehmann estimate of the
  shift (the median of all pairwise differences new - baseline), relative to the baseline's
  median, with a distribution-free confidence interval at level ``1 - max_pvalue``: the whole
  interval must lie beyond ``min_effect`` on one side.

The verdict is **same** when the interval lies inside ``(-min_effect, +min_effect)`` (or the
rank test finds no shift and the estimate is inside it), **unknown** when either side has
fewer than ``min_samples`` samples or the interval straddles the effect size (too much noise
to tell), and **different** otherwise (docs/reference/thresholds.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
from scipy import stats

DEFAULT_MAX_PVALUE = 0.05
"""The rank test's significance level, and one minus the interval's confidence level."""
DEFAULT_MIN_EFFECT = 0.02
"""The smallest relative shift of the median that counts as a change (0.02 is 2 %)."""
COMPARED_AT_MOST = 500
"""Samples of each side compared: a larger side is thinned to this many of its quantiles
(evenly spaced by rank), so that the pairwise differences stay at most 250,000 whatever the
window and the report hold (64 runs of 1,000 samples against 100 iterations would be billions)."""
MIN_SAMPLES = 4
"""Fewer samples than this on either side: **unknown**. With 3 against 3 no two-sided rank test
can reach p < 0.1, so no smaller sample could ever be told apart."""


class Verdict(StrEnum):
    SAME = "same"
    DIFFERENT = "different"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Comparison:
    """What the test found. ``shift`` and its interval are relative to ``baseline`` (0.05 is
    5 % more); they are None when a side had too few samples or the baseline's median is 0."""

    verdict: Verdict
    baseline: float | None
    """The baseline samples' median."""
    new: float | None
    """The new samples' median."""
    shift: float | None
    low: float | None
    high: float | None
    pvalue: float | None
    reason: str


def compare(
    baseline: Sequence[float],
    new: Sequence[float],
    *,
    max_pvalue: float = DEFAULT_MAX_PVALUE,
    min_effect: float = DEFAULT_MIN_EFFECT,
    min_samples: int = MIN_SAMPLES,
) -> Comparison:
    """The verdict on ``new`` against ``baseline`` (both finite values, any order)."""
    if len(baseline) < min_samples or len(new) < min_samples:
        return Comparison(
            Verdict.UNKNOWN,
            _median(baseline),
            _median(new),
            None,
            None,
            None,
            None,
            f"too few samples ({len(baseline)} baseline, {len(new)} new; "
            f"at least {min_samples} each)",
        )
    before = _thinned(np.asarray(baseline, dtype=float))
    after = _thinned(np.asarray(new, dtype=float))
    center = float(np.median(before))
    pvalue = _rank_pvalue(before, after)
    if center == 0.0:
        return Comparison(
            Verdict.UNKNOWN,
            center,
            float(np.median(after)),
            None,
            None,
            None,
            pvalue,
            "the baseline's median is 0: no relative shift",
        )
    differences = np.sort(np.subtract.outer(after, before).ravel())
    shift = float(np.median(differences)) / abs(center)
    low, high = _interval(differences, len(after), len(before), max_pvalue)
    low, high = low / abs(center), high / abs(center)
    verdict, reason = _decide(shift, low, high, pvalue, max_pvalue, min_effect)
    return Comparison(verdict, center, float(np.median(after)), shift, low, high, pvalue, reason)


def _decide(
    shift: float, low: float, high: float, pvalue: float, max_pvalue: float, min_effect: float
) -> tuple[Verdict, str]:
    beyond = low >= min_effect or high <= -min_effect
    if pvalue <= max_pvalue and beyond:
        return Verdict.DIFFERENT, (
            f"shift {shift:+.2%} (interval {low:+.2%} to {high:+.2%}) beyond ±{min_effect:.2%}, "
            f"p = {pvalue:.3g}"
        )
    if -min_effect < low and high < min_effect:
        return Verdict.SAME, f"interval {low:+.2%} to {high:+.2%} within ±{min_effect:.2%}"
    if pvalue > max_pvalue and abs(shift) < min_effect:
        return Verdict.SAME, f"no shift found (p = {pvalue:.3g}), estimate {shift:+.2%}"
    return Verdict.UNKNOWN, (
        f"interval {low:+.2%} to {high:+.2%} straddles ±{min_effect:.2%} (p = {pvalue:.3g})"
    )


def _thinned(values: np.ndarray) -> np.ndarray:
    """``values`` sorted, at most ``COMPARED_AT_MOST`` of them: evenly spaced by rank, the
    smallest and largest kept."""
    ordered = np.sort(values)
    if len(ordered) <= COMPARED_AT_MOST:
        return ordered
    picks = np.linspace(0, len(ordered) - 1, COMPARED_AT_MOST).round().astype(int)
    thinned: np.ndarray = ordered[picks]
    return thinned


def _rank_pvalue(before: np.ndarray, after: np.ndarray) -> float:
    if np.all(before == before[0]) and np.all(after == before[0]):
        return 1.0  # all values equal: SciPy's normal approximation divides by zero
    result = stats.mannwhitneyu(after, before, alternative="two-sided")
    pvalue = float(result.pvalue)
    return 1.0 if math.isnan(pvalue) else pvalue


def _interval(differences: np.ndarray, n: int, m: int, alpha: float) -> tuple[float, float]:
    """The distribution-free interval of the Hodges-Lehmann shift: the k-th smallest and k-th
    largest pairwise differences, k from the normal approximation of U's distribution."""
    z = float(stats.norm.ppf(1.0 - alpha / 2.0))
    k = math.floor(n * m / 2.0 - z * math.sqrt(n * m * (n + m + 1) / 12.0))
    k = min(max(k, 0), len(differences) - 1)
    return float(differences[k]), float(differences[len(differences) - 1 - k])


def _median(values: Sequence[float]) -> float | None:
    return float(np.median(np.asarray(values, dtype=float))) if values else None
