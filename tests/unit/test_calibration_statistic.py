"""The proposal a calibration makes from its runs' values (docs/how-to/thresholds-alerts.md)."""

from __future__ import annotations

import math
import statistics

import pytest
from scipy import stats

from benchrunner.detection.calibration import MIN_RUNS, POWER, propose


def test_the_proposal_is_a_t_test_at_the_rate_asked_for_with_its_detectable_change() -> None:
    values = [100.0, 102.0, 98.0, 101.0, 99.0]
    found = propose(values, 0.02)
    assert found is not None
    assert found.runs == 5 and found.mean == 100.0
    assert found.sd == pytest.approx(statistics.stdev(values))
    assert found.cv == pytest.approx(statistics.stdev(values) / 100.0)
    assert found.boundary == pytest.approx(0.99)
    t = stats.t.ppf(0.99, 4)
    expected = (t * math.sqrt(1 + 1 / 5) + stats.norm.ppf(POWER)) * found.cv
    assert found.detectable_change == pytest.approx(expected, rel=1e-12)


def test_a_noisier_benchmark_or_fewer_runs_can_only_detect_larger_changes() -> None:
    quiet = propose([100.0, 101.0, 99.0, 100.5, 99.5, 100.0], 0.01)
    noisy = propose([100.0, 110.0, 90.0, 105.0, 95.0, 100.0], 0.01)
    few = propose([100.0, 101.0, 99.0], 0.01)
    assert quiet is not None and noisy is not None and few is not None
    assert noisy.detectable_change > quiet.detectable_change
    assert few.detectable_change > propose([100.0, 101.0, 99.0] * 3, 0.01).detectable_change  # type: ignore[union-attr]


def test_a_stricter_false_alarm_rate_costs_sensitivity() -> None:
    values = [100.0, 102.0, 98.0, 101.0, 99.0, 100.0]
    loose, strict = propose(values, 0.1), propose(values, 0.001)
    assert loose is not None and strict is not None
    assert strict.boundary > loose.boundary
    assert strict.detectable_change > loose.detectable_change


def test_too_few_runs_or_a_zero_mean_propose_nothing() -> None:
    assert propose([1.0] * (MIN_RUNS - 1), 0.01) is None
    assert propose([0.0, 0.0, 0.0], 0.01) is None


@pytest.mark.parametrize("rate", [0.0, 1.0, -0.1])
def test_the_false_alarm_rate_must_be_a_probability(rate: float) -> None:
    with pytest.raises(ValueError, match="false_alarm_rate"):
        propose([1.0, 2.0, 3.0], rate)
