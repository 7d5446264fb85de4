"""Confirmation before alerting (docs/how-to/thresholds-alerts.md): whether re-runs agree with a
crossing, and the outcome of the agreements, as tables."""

from __future__ import annotations

import pytest

from benchrunner.detection import confirmation
from benchrunner.detection.confirmation import (
    Outcome,
    Side,
    change_agrees,
    confirm_runs,
    decide,
    limit_agrees,
)


@pytest.mark.parametrize(
    ("side", "lower", "upper", "value", "agrees"),
    [
        ("upper", None, 110.0, 300.0, True),
        ("upper", None, 110.0, 110.0, False),  # on the limit is inside it, as when judged
        ("upper", None, 110.0, 100.0, False),
        ("upper", 90.0, None, 300.0, False),  # no upper limit drawn: nothing to cross
        ("lower", 90.0, 110.0, 50.0, True),
        ("lower", 90.0, 110.0, 90.0, False),
        ("lower", 90.0, 110.0, 300.0, False),  # beyond the other limit is not the same crossing
    ],
)
def test_a_rerun_agrees_with_a_limit_crossing_beyond_the_same_limit(
    side: Side, lower: float | None, upper: float | None, value: float, agrees: bool
) -> None:
    assert limit_agrees(side, lower, upper, value) is agrees


@pytest.mark.parametrize(
    ("side", "before", "after", "value", "agrees"),
    [
        ("upper", 100.0, 200.0, 190.0, True),
        ("upper", 100.0, 200.0, 151.0, True),
        ("upper", 100.0, 200.0, 150.0, False),  # the midpoint belongs to neither level
        ("upper", 100.0, 200.0, 105.0, False),
        ("lower", 200.0, 100.0, 110.0, True),
        ("lower", 200.0, 100.0, 190.0, False),
    ],
)
def test_a_rerun_agrees_with_a_step_on_the_new_levels_side_of_its_midpoint(
    side: Side, before: float, after: float, value: float, agrees: bool
) -> None:
    assert change_agrees(side, before, after, value) is agrees


@pytest.mark.parametrize(
    ("agreements", "outcome"),
    [
        ([True, True], Outcome.CONFIRMED),
        ([True], Outcome.CONFIRMED),
        ([True, False], Outcome.SUSPECTED),  # one re-run back to normal: a blip
        ([False, False], Outcome.SUSPECTED),
        ([], Outcome.UNCONFIRMED),  # no re-run measured it: the alert stands as it was
    ],
)
def test_every_measuring_rerun_must_agree(agreements: list[bool], outcome: Outcome) -> None:
    assert decide(agreements) is outcome


def test_a_threshold_without_its_own_count_takes_the_default() -> None:
    assert confirm_runs(None) == confirmation.DEFAULT_CONFIRM_RUNS
    assert confirm_runs(0) == 0
    assert confirm_runs(3) == 3


@pytest.mark.parametrize(
    ("side", "lower", "upper", "verdict"),
    [
        ("upper", 1.05, 1.08, "different"),
        ("upper", 1.01, 1.08, "unknown"),  # reaches into the margin
        ("upper", 0.99, 1.01, "same"),
        ("upper", 0.90, 0.95, "unknown"),  # lower, but the crossing was upward
        ("lower", 0.90, 0.95, "different"),
        ("lower", 0.98, 1.02, "same"),
        ("lower", 1.05, 1.08, "unknown"),
    ],
)
def test_a_duet_interval_answers_for_the_crossings_side(
    side: Side, lower: float, upper: float, verdict: str
) -> None:
    assert confirmation.duet_verdict(side, lower, upper, 0.02) == verdict
    expected = Outcome.CONFIRMED if verdict == "different" else Outcome.SUSPECTED
    assert confirmation.decide_duet(confirmation.duet_verdict(side, lower, upper, 0.02)) is expected


def test_a_duet_judges_by_a_percentage_boundary_else_the_default_margin() -> None:
    assert confirmation.duet_margin("upper", "percentage", 0.05, 0.1) == 0.1
    assert confirmation.duet_margin("lower", "percentage", 0.05, 0.1) == 0.05
    default = confirmation.DEFAULT_DUET_MARGIN
    assert confirmation.duet_margin("lower", "percentage", None, 0.1) == default
    assert confirmation.duet_margin("upper", "t_test", 0.99, 0.99) == default


def test_a_duet_judges_a_samples_crossing_by_half_its_smallest_shift() -> None:
    assert confirmation.duet_margin("upper", "samples", None, None) == 0.01
    assert confirmation.duet_margin("lower", "samples", None, None, 0.05) == 0.025
    default = confirmation.DEFAULT_DUET_MARGIN  # a margin of 0 could never answer same
    assert confirmation.duet_margin("upper", "samples", None, None, 0.0) == default


@pytest.mark.parametrize(
    ("lower", "upper", "verdict"),
    [
        (1.012, 1.03, "different"),  # beyond half of min_magnitude
        (0.985, 1.018, "same"),  # whatever changed, under min_magnitude
        (1.005, 1.025, "unknown"),  # may be under half of it, may be past all of it
    ],
)
def test_a_samples_duet_is_the_same_when_its_interval_is_within_the_whole_min_magnitude(
    lower: float, upper: float, verdict: str
) -> None:
    margin = confirmation.duet_margin("upper", "samples", None, None)
    within = confirmation.same_margin("samples", margin)
    assert within == pytest.approx(0.02)
    assert confirmation.duet_verdict("upper", lower, upper, margin, within) == verdict
    assert confirmation.same_margin("samples", 0.025, 0.05) == 0.05
    assert confirmation.same_margin("percentage", 0.1) == 0.1


def test_a_samples_duet_of_min_magnitude_0_is_the_same_only_within_its_margin() -> None:
    margin = confirmation.duet_margin("upper", "samples", None, None, 0.0)
    within = confirmation.same_margin("samples", margin, 0.0)
    assert within == margin == confirmation.DEFAULT_DUET_MARGIN
    assert confirmation.duet_verdict("upper", 0.99, 1.03, margin, within) == "unknown"
