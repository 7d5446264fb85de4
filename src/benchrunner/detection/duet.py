"""A duet's verdict: the rounds' contender/baseline ratios paired per benchmark and measure,
their median with a bootstrap confidence interval, and whether it is an alert.

Pairing: round ``r``'s contender value is divided by round ``r``'s baseline value; a round
missing either side, or with a value that is not positive, gives no pair. The two runs of a
round ran back to back on the same cores, so their ratio cancels what the machine did over
minutes; what is left varies from round to round and is what the interval measures.

Interval: a seeded percentile bootstrap of the median log ratio (rounds resampled with
replacement, ``resamples`` times), exponentiated. Logs make the interval symmetric for a
slowdown and the matching speed-up (x 1.01 and / 1.01). The median, not the mean: a run's wall
time is its work plus whatever delayed it (an interrupt, a scheduler tick given to another
task, the hypervisor), so a few rounds carry a delay many times the change being looked for,
and a mean follows them where a median does not: on a shared machine, a small slowdown in
wall time that the median finds reliably is missed often by the mean, at the same rate of
false alarms. ``METHOD`` names it for the record.

Alert: the interval excludes 1 by more than ``margin`` (a fraction: 0.01 is 1 %), i.e. its
lower end is above ``1 + margin`` (limit ``upper``: the contender's values are higher) or
its upper end is below ``1 - margin`` (limit ``lower``). Whether higher is worse depends on
the measure; the alert says which way, as a boundary alert's ``limit`` does. A margin may
differ per side (``DuetMargin``, as a percentage threshold's boundaries do), and a side
without one raises nothing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

import numpy as np

METHOD = "percentile bootstrap of the median log ratio over paired rounds"
RESAMPLE_CHUNK = 1000
"""Resamples drawn at once: bounds memory to ``RESAMPLE_CHUNK x rounds`` indexes."""
MIN_LOG_ERROR = 1e-6
"""The standard error of a log ratio that pooling takes a zero-width interval for (rounds that
all measured the same ratio): a finite weight, far larger than any measured interval's."""

SeriesKey = tuple[str, str]
"""(benchmark, measure)."""
Limit = Literal["lower", "upper"]


@dataclass(frozen=True)
class DuetEstimate:
    benchmark: str
    measure: str
    rounds: int
    """Paired rounds the estimate stands on."""
    ratio: float
    """Median of the rounds' contender/baseline ratios."""
    lower: float
    upper: float
    limit: Limit | None
    """Set when the interval excludes 1 by more than the margin: an alert (None too when
    estimated without a margin, to be judged later)."""


@dataclass(frozen=True)
class DuetMargin:
    """How far beyond 1 the interval must lie for an alert, per side (fractions: 0.01 is 1 %);
    None: that side raises nothing."""

    lower: float | None
    upper: float | None


def paired_ratios(
    baseline: Mapping[int, Mapping[SeriesKey, float]],
    contender: Mapping[int, Mapping[SeriesKey, float]],
) -> dict[SeriesKey, list[float]]:
    """Per benchmark and measure, each round's contender/baseline ratio, by round order."""
    ratios: dict[SeriesKey, list[float]] = {}
    for round_index in sorted(set(baseline) & set(contender)):
        a, b = baseline[round_index], contender[round_index]
        for key in sorted(set(a) & set(b)):
            if a[key] > 0 and b[key] > 0 and math.isfinite(a[key]) and math.isfinite(b[key]):
                ratios.setdefault(key, []).append(b[key] / a[key])
    return ratios


def ratio_interval(
    ratios: Sequence[float], *, confidence: float, resamples: int, seed: int
) -> tuple[float, float, float]:
    """(median, lower, upper) of ``ratios`` (all positive) at ``confidence``; the same seed
    gives the same interval. One ratio gives a zero-width interval."""
    if not ratios:
        raise ValueError("no ratios to estimate from")
    logs = np.log(np.asarray(ratios, dtype=float))
    centre = float(np.exp(np.median(logs)))
    if len(logs) == 1:
        return centre, centre, centre
    rng = np.random.default_rng(seed)
    medians = np.empty(resamples)
    for start in range(0, resamples, RESAMPLE_CHUNK):
        count = min(RESAMPLE_CHUNK, resamples - start)
        picks = rng.integers(0, len(logs), size=(count, len(logs)))
        medians[start : start + count] = np.median(logs[picks], axis=1)
    tail = (1 - confidence) / 2
    low, high = np.quantile(medians, [tail, 1 - tail])
    return centre, float(np.exp(low)), float(np.exp(high))


def sided_limit(lower: float, upper: float, margin: DuetMargin) -> Limit | None:
    """The side an interval ``[lower, upper]`` of a ratio lies beyond its margin, if any."""
    if margin.upper is not None and lower > 1 + margin.upper:
        return "upper"
    if margin.lower is not None and upper < 1 - margin.lower:
        return "lower"
    return None


def alert_limit(lower: float, upper: float, margin: float) -> Limit | None:
    return sided_limit(lower, upper, DuetMargin(margin, margin))


def estimate_duet(
    baseline: Mapping[int, Mapping[SeriesKey, float]],
    contender: Mapping[int, Mapping[SeriesKey, float]],
    *,
    confidence: float,
    resamples: int,
    seed: int,
    margin: float | None,
) -> list[DuetEstimate]:
    """One estimate per benchmark and measure with at least one paired round, sorted; judged
    against ``margin`` unless it is None (the server judges each against its own margin)."""
    out: list[DuetEstimate] = []
    for (benchmark, measure), ratios in sorted(paired_ratios(baseline, contender).items()):
        ratio, lower, upper = ratio_interval(
            ratios, confidence=confidence, resamples=resamples, seed=seed
        )
        out.append(
            DuetEstimate(
                benchmark=benchmark,
                measure=measure,
                rounds=len(ratios),
                ratio=ratio,
                lower=lower,
                upper=upper,
                limit=None if margin is None else alert_limit(lower, upper, margin),
            )
        )
    return out


def another_duet(verdict: str, rounds_after: int, most_rounds: int) -> bool:
    """Whether a duet's answer earns another duet: only ``unknown`` does (``same`` and
    ``different`` are answers), and only while ``rounds_after``, the rounds the next answer
    would stand on, stay within ``most_rounds``. A bisection's step judges its newest duet
    alone and doubles its rounds, up to ``bisection.jobs.MAX_ROUNDS`` (its job budget aside);
    a confirmation pools its duets, each of the same rounds, within
    ``detection.confirmation.MAX_DUET_ROUNDS``."""
    return verdict == "unknown" and rounds_after <= most_rounds


def pooled_interval(
    intervals: Sequence[tuple[float, float, float]], *, confidence: float, looks: int = 1
) -> tuple[float, float, float]:
    """(ratio, lower, upper) of independent duets of the same two versions taken together,
    each given as its (ratio, lower, upper) at ``confidence``; one duet's as it is when
    ``looks`` is 1.

    ``looks``: how many times the caller may judge the duets pooled so far, stopping at the
    first answer, as a confirmation does after each of its duets. Each look that may stop raises
    the chance that one of them finds two equal versions different by chance; so the interval
    returned is at ``1 - (1 - confidence) / looks`` (Bonferroni's bound), which keeps that
    chance, over all the looks, within ``1 - confidence``.
    Pooled on the log scale with inverse-variance weights (a fixed-effect combination): each
    duet's standard error is its interval's width over ``2 z``, the pooled log ratio is the
    weighted mean of theirs, and its standard error is ``1 / sqrt(sum of weights)``, so the
    interval narrows as the rounds add up, as one duet of all the rounds would. Why pooled and
    not the newest duet alone: duets of equal rounds have intervals of about equal width, so a
    ratio near the margin would stay unknown, or cross it by chance, each extra duet another
    throw of the same dice (and each a chance of a false ``different``); pooling spends every
    round on one narrower answer. The bootstrap median's interval is taken as normal on the
    log scale: close with the tens of rounds a confirmation runs, rough with a handful.
    ``ValueError`` without intervals, or with ``looks`` under 1."""
    if not intervals:
        raise ValueError("no intervals to pool")
    if looks < 1:
        raise ValueError(f"looks must be at least 1, not {looks}")
    if len(intervals) == 1 and looks == 1:
        return intervals[0]
    z = NormalDist().inv_cdf(1 - (1 - confidence) / 2)
    judged_at = NormalDist().inv_cdf(1 - (1 - confidence) / (2 * looks))
    weights: list[float] = []
    centres: list[float] = []
    for ratio, lower, upper in intervals:
        error = max((math.log(upper) - math.log(lower)) / (2 * z), MIN_LOG_ERROR)
        weights.append(1 / error**2)
        centres.append(math.log(ratio))
    total = math.fsum(weights)
    centre = math.fsum(w * c for w, c in zip(weights, centres, strict=True)) / total
    half = judged_at / math.sqrt(total)
    return math.exp(centre), math.exp(centre - half), math.exp(centre + half)
