"""Small statistics the noise benchmarks share (footprint, noise guard cost, duet sensitivity):
spread, an unpaired interval for plain A-then-B runs, and the load the machine was under."""

from __future__ import annotations

import math
import os
import statistics
from collections.abc import Sequence

from scipy import stats


def cv(values: Sequence[float]) -> float:
    """Coefficient of variation (sample standard deviation / mean)."""
    return statistics.stdev(values) / statistics.fmean(values)


def welch_ratio_interval(
    baseline: Sequence[float], contender: Sequence[float], *, confidence: float
) -> tuple[float, float, float]:
    """(ratio, lower, upper): Welch's t interval for the difference of the mean log values,
    exponentiated, i.e. the contender/baseline ratio of geometric means with its interval.

    The plain (unpaired) counterpart of ``detection.duet.ratio_interval``: the same kind of
    figure, judged the same way (``detection.duet.alert_limit``), from the same number of runs
    taken as two blocks instead of paired rounds. Needs at least two values on each side."""
    a = [math.log(value) for value in baseline]
    b = [math.log(value) for value in contender]
    test = stats.ttest_ind(b, a, equal_var=False)
    interval = test.confidence_interval(confidence_level=confidence)
    shift = statistics.fmean(b) - statistics.fmean(a)
    return math.exp(shift), math.exp(interval.low), math.exp(interval.high)


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"
