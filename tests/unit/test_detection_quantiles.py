"""The distribution tests' limits are exactly those of SciPy's frozen distributions.

``boundary`` computes quantiles at the ufunc level (``scipy.special``) instead of building a
frozen ``scipy.stats`` distribution per metric; this compares the two bit for bit on random
histories, sizes and boundaries over the whole validated range [0.5, 1.0).
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from scipy import stats

from benchrunner.detection import Limits, Model, TestKind, limits

CASES = 300


def _reference(test: TestKind, history: list[float], lower: float, upper: float) -> Limits:
    """The limits as the frozen distributions give them: location and scale fitted to the
    history taken newest first (sample deviation), the t-test's scale widened by
    sqrt(1 + 1/n), the lower quantile mirrored through the baseline."""
    values = np.asarray(history[::-1], dtype=np.float64)
    if test is TestKind.LOG_NORMAL:
        logs = np.log(values)
        location = float(np.mean(logs))
        normal = stats.norm(loc=location, scale=float(np.std(logs, ddof=1)))
        # The C library's exp, as the boundary (and Bencher's f64::exp) takes it: NumPy's own
        # may differ in the last bit on CPUs where it has a vectorized one.
        baseline = math.exp(location)
        return Limits(
            baseline,
            2.0 * baseline - float(np.exp(normal.ppf(lower))),
            float(np.exp(normal.ppf(upper))),
        )
    mean, deviation = float(np.mean(values)), float(np.std(values, ddof=1))
    if test is TestKind.Z_SCORE:
        frozen = stats.norm(loc=mean, scale=deviation)
    else:
        size = len(values)
        frozen = stats.t(df=size - 1, loc=mean, scale=deviation * float(np.sqrt(1 + 1 / size)))
    return Limits(mean, 2.0 * mean - float(frozen.ppf(lower)), float(frozen.ppf(upper)))


@pytest.mark.parametrize("test", [TestKind.Z_SCORE, TestKind.T_TEST, TestKind.LOG_NORMAL])
def test_limits_equal_the_frozen_distributions_bit_for_bit(test: TestKind) -> None:
    rng = random.Random(f"quantiles-{test.value}")
    for _ in range(CASES):
        size = rng.choice([2, 3, 5, 10, 64, 200])
        centre = 10 ** rng.uniform(-6, 9)
        history = [centre * rng.lognormvariate(0, rng.uniform(1e-4, 1.0)) for _ in range(size)]
        lower = rng.choice([0.5, 0.9, 0.975, 0.99, rng.uniform(0.5, 1.0)])
        upper = rng.choice([0.5, 0.95, 0.99, 0.999999, rng.uniform(0.5, 1.0)])
        model = Model(test, lower_boundary=lower, upper_boundary=upper)
        assert limits(model, history) == _reference(test, history, lower, upper), (
            test,
            history,
            lower,
            upper,
        )
