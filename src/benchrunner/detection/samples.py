"""The ``samples`` test: a report's runs against the baseline window's runs.

Runs are the independent units. The samples of one run share its machine state (its code
layout, its neighbours, its clock), so a rank test over pooled samples counts five samples of
one slow run as five pieces of evidence, and is sure of any shift the size of the window's own
run-to-run wander (a slow drift, a benchmark that lands on one of two layouts). So each run is
summed up by the median of its samples, and the test works on those:

- **the limit**: the baseline window's center is the median of its runs' medians, and its
  *run-to-run spread* a robust standard deviation of those medians: the larger of the
  inter-quartile range / 1.349 and the 5 %-95 % range / 3.29 (each equals the standard
  deviation of normal noise; the second also spans a minority of runs at another level). A run
  is *beyond* the limit when its median is further from the center than both ``min_effect``
  (relative) and ``SPREAD_FACTOR`` times that spread;
- **the rank test**: a two-sided Mann-Whitney U test of the judged runs' medians against the
  baseline's, p-value at most ``max_pvalue``. With two runs beyond every baseline run it needs
  eight baseline runs (p = 2/45), so a short window cannot alert;
- **two runs**: one run beyond the limit may be a one-off slow run, which no statistic on that
  run alone can tell from a step. The judged runs are the report's runs (with its confirmation
  re-runs, if any); when fewer than ``MIN_RUNS``, the newest baseline runs join them.

The verdict is **different** when every judged run is beyond the limit on the same side and
the rank test finds a shift; **unknown** when the baseline window holds fewer than
``MIN_BASELINE_RUNS`` runs, when the report is beyond the limit but the other judged runs or
the rank test do not agree (one run: the next run, or a re-run, tells), or when the report's
shift is beyond ``min_effect`` but within the spread (too noisy to tell), or beyond half of
``min_effect`` while the spread widens the limit past it (a run of a step of ``min_effect``
measures that little often enough there); **same** otherwise: the report's shift is within
``min_effect`` where the spread is narrow, within half of it where the spread widens the limit
past ``min_effect`` (docs/reference/thresholds.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
from scipy import stats

DEFAULT_MAX_PVALUE = 0.05
"""The rank test's significance level."""
DEFAULT_MIN_EFFECT = 0.02
"""The smallest relative shift of the median that counts as a change (0.02 is 2 %)."""
SPREAD_FACTOR = 3.5
"""How many run-to-run spreads (robust standard deviations of the baseline's run medians) a
run must move to be beyond the limit."""
MIN_RUNS = 2
"""Judged runs needed for **different**: one run beyond the limit may be a one-off."""
MIN_BASELINE_RUNS = 4
"""Fewer baseline runs than this: **unknown** (no spread to speak of)."""
NORMAL_IQR = 1.349
"""The inter-quartile range of a standard normal distribution."""
NORMAL_90 = 3.290
"""The 5 %-95 % range of a standard normal distribution."""

Runs = Sequence[Sequence[float]]
"""Runs, oldest first, each the samples one run gave (at least one)."""


class Verdict(StrEnum):
    SAME = "same"
    DIFFERENT = "different"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Comparison:
    """What the test found. ``shift``, ``limit`` and ``spread`` are relative to ``baseline``
    (0.05 is 5 % more); they are None when the window had too few runs or its center is 0."""

    verdict: Verdict
    baseline: float | None
    """The median of the baseline runs' medians."""
    new: float | None
    """The median of the report's samples (its re-runs' too)."""
    shift: float | None
    limit: float | None
    """How far a run's median must move to be beyond the limit."""
    spread: float | None
    """The baseline's run-to-run spread."""
    pvalue: float | None
    beyond: bool
    """Whether the report's runs are beyond the limit (on one side): one more run may settle an
    **unknown** answer."""
    reason: str
    borrowed: int = 0
    """How many of the newest baseline runs were judged with the new ones (a **different**
    answer's step began at the first of them)."""


def compare(
    baseline: Runs,
    new: Runs,
    *,
    max_pvalue: float = DEFAULT_MAX_PVALUE,
    min_effect: float = DEFAULT_MIN_EFFECT,
) -> Comparison:
    """The verdict on the ``new`` runs (a report's, with its re-runs) against the ``baseline``
    window's runs (oldest first). When ``new`` holds fewer than ``MIN_RUNS`` runs, the newest
    baseline runs are judged with it (and left out of the baseline: ``borrowed``). Runs without
    samples are ignored; the values must be finite."""
    baseline = [run for run in baseline if len(run)]
    new = [run for run in new if len(run)]
    after = _median([v for run in new for v in run])
    companions = max(0, MIN_RUNS - len(new))
    if companions and len(baseline) > companions:
        judged, baseline = [*baseline[-companions:], *new], baseline[:-companions]
    else:
        judged = list(new)
    centers = np.asarray([np.median(run) for run in baseline], dtype=float)
    center = float(np.median(centers)) if len(centers) else None
    if not new or len(centers) < MIN_BASELINE_RUNS:
        return _unknown(
            center,
            after,
            f"too few runs ({len(centers)} in the baseline window, {len(new)} new; "
            f"at least {MIN_BASELINE_RUNS} and 1)",
        )
    if center is None or center == 0.0 or after is None:
        return _unknown(center, after, "the baseline's median is 0: no relative shift")
    scale = abs(center)
    spread = _spread(centers) / scale
    limit = max(min_effect, SPREAD_FACTOR * spread)
    shift = (after - center) / scale
    shifts = [(float(np.median(run)) - center) / scale for run in judged]
    pvalue = _rank_pvalue(centers, np.asarray([np.median(run) for run in judged], dtype=float))
    beyond = abs(shift) >= limit and all(
        abs(s) >= limit and (s > 0) == (shift > 0) for s in shifts[companions:]
    )
    all_beyond = beyond and all(abs(s) >= limit and (s > 0) == (shift > 0) for s in shifts)
    found = (
        f"shift {shift:+.2%}, limit ±{limit:.2%} (spread {spread:.2%} times {SPREAD_FACTOR:g}, "
        f"at least {min_effect:.2%}), p = {pvalue:.3g} over {len(judged)} against "
        f"{len(centers)} runs"
    )
    if all_beyond and pvalue <= max_pvalue:
        verdict = Verdict.DIFFERENT
    elif beyond:
        verdict, found = Verdict.UNKNOWN, f"{found}: not every judged run agrees yet"
    elif abs(shift) >= min_effect or (abs(shift) >= min_effect / 2 and limit > min_effect):
        verdict, found = Verdict.UNKNOWN, f"{found}: within the run-to-run spread"
    else:
        verdict = Verdict.SAME
    borrowed = len(judged) - len(new)
    return Comparison(verdict, center, after, shift, limit, spread, pvalue, beyond, found, borrowed)


def _unknown(center: float | None, after: float | None, reason: str) -> Comparison:
    return Comparison(Verdict.UNKNOWN, center, after, None, None, None, None, False, reason)


def _spread(centers: np.ndarray) -> float:
    """A robust standard deviation of the run medians: the larger of two quantile ranges, each
    scaled to a normal distribution's standard deviation."""
    q05, q25, q75, q95 = np.quantile(centers, [0.05, 0.25, 0.75, 0.95])
    return float(max((q75 - q25) / NORMAL_IQR, (q95 - q05) / NORMAL_90))


def _rank_pvalue(before: np.ndarray, after: np.ndarray) -> float:
    if np.all(before == before[0]) and np.all(after == before[0]):
        return 1.0  # all values equal: SciPy's normal approximation divides by zero
    result = stats.mannwhitneyu(after, before, alternative="two-sided")
    pvalue = float(result.pvalue)
    return 1.0 if math.isnan(pvalue) else pvalue


def _median(values: Sequence[float]) -> float | None:
    return float(np.median(np.asarray(values, dtype=float))) if len(values) else None
