"""A threshold proposed from an A/A run: the same job run ``n`` times with nothing changed.

The runs' values of one benchmark and measure give its mean and sample standard deviation
(divided by n - 1), hence its coefficient of variation ``cv``. The proposal is a ``t_test``
with both boundaries at ``1 - rate / 2``: with values like the calibration's, a new value
falls outside the prediction interval (as Bencher's ``t_test`` draws it: Student's t with
n - 1 degrees of freedom, scale ``sd * sqrt(1 + 1/n)``) with probability ``rate``, the false
alarms per run the team chose.

The smallest detectable change is the relative change that such a threshold catches in one
run nine times in ten: a shift ``d * mean`` puts a new value beyond the limit
``t * sd * sqrt(1 + 1/n)`` with probability 0.9 when ``d = (t * sqrt(1 + 1/n) + z_0.9) * cv``
(the new value's own spread being the calibration's ``sd``). A benchmark whose detectable
change is too large for the team is one to make quieter (more iterations, a quiet core), not
to watch with a tighter threshold: that would only raise false alarms.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

POWER = 0.9
"""The probability with which the detectable change is caught in one run."""
MIN_RUNS = 3
"""Fewer values give no spread worth a threshold."""
PROPOSED_MAX_SAMPLE_SIZE = 64
"""The history the proposed threshold looks at: Bencher's documented example's."""


@dataclass(frozen=True)
class Proposal:
    runs: int
    mean: float
    sd: float
    cv: float
    boundary: float
    """Both boundaries of the proposed ``t_test`` (a cumulative probability)."""
    detectable_change: float
    """Relative: 0.05 is a 5 % change, caught in one run with probability ``POWER``."""


def propose(values: Sequence[float], false_alarm_rate: float) -> Proposal | None:
    """The proposal for one benchmark and measure; None with fewer than ``MIN_RUNS`` values or
    a mean of zero."""
    if not 0 < false_alarm_rate < 1:
        raise ValueError("false_alarm_rate must be between 0 and 1")
    n = len(values)
    if n < MIN_RUNS:
        return None
    mean = statistics.fmean(values)
    if mean == 0:
        return None
    sd = statistics.stdev(values)
    cv = abs(sd / mean)
    boundary = 1 - false_alarm_rate / 2
    # Imported here, as the other statistics are: SciPy's stats module adds most of a second to
    # every server start, which imports this module with its calibration routes.
    from scipy import stats

    t = float(stats.t.ppf(boundary, n - 1))
    z = float(stats.norm.ppf(POWER))
    detectable = (t * math.sqrt(1 + 1 / n) + z) * cv
    return Proposal(n, mean, sd, cv, boundary, detectable)
