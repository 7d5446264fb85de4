"""The look-back's decisions on labelled series: which steps found after the fact are raised,
which already have their alert, and which dismissed steps re-open."""

from __future__ import annotations

import numpy as np
import pytest

from benchrunner.detection.change_point import ChangePoint, change_points_many
from benchrunner.detection.look_back import MIN_BEFORE, PERSIST, Known, Raise, Reopen, look_back

SEEDS = range(5)


def noisy(seed: int, *segments: tuple[float, int]) -> list[float]:
    """Segments of (level, length) with 1 % Gaussian noise, the same for the same seed."""
    rng = np.random.default_rng(seed)
    return [float(x) for level, size in segments for x in rng.normal(level, level / 100, size)]


def judge(
    series: list[float], known: list[Known], reports: list[int] | None = None
) -> list[Raise | Reopen]:
    """The look-back at the detector's defaults; ``reports``: each point's (None: its own)."""
    return look_back(series, known, found_in(series), reports=reports)


def found_in(series: list[float], min_magnitude: float = 0.0) -> list[ChangePoint]:
    """The change points of ``series`` at the detector's defaults, as the server finds them
    (``change_points_many``, here of one series)."""
    [found] = change_points_many([series], max_pvalue=0.001, min_magnitude=min_magnitude)
    return found


def threshold_alert(index: int, *, dismissed_before: int | None = None) -> Known:
    after = dismissed_before if dismissed_before is not None else 10_000
    return Known(7, index, False, dismissed_before is not None, after)


def change_alert(index: int, *, dismissed_before: int | None = None) -> Known:
    after = dismissed_before if dismissed_before is not None else 10_000
    return Known(8, index, True, dismissed_before is not None, after)


def raised_at(actions: list[Raise | Reopen]) -> list[int]:
    return [a.change.index for a in actions if isinstance(a, Raise)]


@pytest.mark.parametrize("seed", SEEDS)
def test_a_step_without_an_alert_is_raised_where_it_began(seed: int) -> None:
    series = noisy(seed, (100.0, 30), (110.0, 10))
    [action] = judge(series, [])
    assert isinstance(action, Raise)
    assert action.change.index == 30
    assert action.change.magnitude == pytest.approx(0.1, abs=0.01)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_step_becomes_clear_a_few_reports_after_it_began(seed: int) -> None:
    """As each report arrives: nothing while the step is the newest point, then one raise at
    the step's start within five more reports, and the same step each time after."""
    series = noisy(seed, (100.0, 30), (106.0, 10))
    assert judge(series[:31], []) == []
    first = next(n for n in range(32, 41) if judge(series[:n], []))
    assert first <= 36
    for n in range(first, 41):
        assert raised_at(judge(series[:n], [])) == [30]


@pytest.mark.parametrize("seed", SEEDS)
def test_flat_noise_raises_nothing(seed: int) -> None:
    assert judge(noisy(seed, (100.0, 60)), []) == []


@pytest.mark.parametrize("at", [29, 30, 31])
def test_a_threshold_alert_at_or_next_to_the_step_is_its_alert(at: int) -> None:
    series = noisy(0, (100.0, 30), (110.0, 10))
    assert judge(series, [threshold_alert(at)]) == []


def test_a_threshold_alert_farther_away_is_another_matter() -> None:
    series = noisy(0, (100.0, 30), (110.0, 10))
    assert raised_at(judge(series, [threshold_alert(34)])) == [30]


@pytest.mark.parametrize("at", [27, 29, 30, 32, 33, 35])
def test_with_iterations_a_threshold_alert_on_the_report_next_to_the_step_is_its_alert(
    at: int,
) -> None:
    """Reports of three iterations: the step begins with report 10 (points 30 to 32); an alert
    anywhere on report 9, 10 or 11 (points 27 to 35) is the step's."""
    series = noisy(0, (100.0, 30), (110.0, 10))
    reports = [i // 3 for i in range(len(series))]
    assert judge(series, [threshold_alert(at)], reports) == []


@pytest.mark.parametrize("at", [26, 36])
def test_with_iterations_a_threshold_alert_two_reports_away_is_another_matter(at: int) -> None:
    series = noisy(0, (100.0, 30), (110.0, 10))
    reports = [i // 3 for i in range(len(series))]
    actions = judge(series, [threshold_alert(at)], reports)
    assert raised_at(actions) == [30]


def test_a_change_alert_nearer_the_step_than_any_other_is_its_alert() -> None:
    series = noisy(0, (100.0, 20), (110.0, 15), (100.0, 15))
    assert raised_at(judge(series, [])) == [20, 35]
    assert raised_at(judge(series, [change_alert(22)])) == [35]
    assert raised_at(judge(series, [change_alert(30)])) == [20]
    assert judge(series, [change_alert(21), change_alert(34)]) == []


def test_a_step_at_the_newest_point_is_left_to_the_thresholds() -> None:
    series = [100.0] * 30 + [150.0]
    assert judge(series, []) == []


def test_a_step_at_the_edge_of_the_window_is_not_raised() -> None:
    series = [100.0, 100.0, *noisy(0, (150.0, 30))]
    assert judge(series, []) == []


def test_a_step_smaller_than_min_magnitude_is_not_raised() -> None:
    series = noisy(0, (100.0, 30), (103.0, 10))
    assert raised_at(judge(series, [])) == [30]
    assert look_back(series, [], found_in(series, min_magnitude=0.05)) == []


def test_a_dismissed_step_reopens_once_it_persisted() -> None:
    """Dismissed when the series held 35 points: the five after it re-open it, four do not."""
    series = noisy(0, (100.0, 30), (110.0, 10))
    dismissed = threshold_alert(30, dismissed_before=35)
    [action] = judge(series, [dismissed])
    assert isinstance(action, Reopen)
    assert (action.alert_id, action.change.index) == (7, 30)
    assert PERSIST == 40 - 35
    assert judge(series[:39], [dismissed]) == []


def test_a_dismissed_step_that_went_back_does_not_reopen() -> None:
    """The level returned before enough points stayed at it: the segment after the step is
    too short, whatever follows."""
    series = noisy(0, (100.0, 30), (110.0, 6), (100.0, 20))
    dismissed = change_alert(30, dismissed_before=33)
    actions = judge(series, [dismissed])
    assert raised_at(actions) == [36]  # the way back is a step of its own
    assert [a for a in actions if isinstance(a, Reopen)] == []


def test_an_open_alert_beside_a_dismissed_one_keeps_the_step_closed() -> None:
    series = noisy(0, (100.0, 30), (110.0, 10))
    known = [change_alert(30, dismissed_before=31), threshold_alert(31)]
    assert judge(series, known) == []


def three_a_report(points: int) -> list[int]:
    """Each point's report when every report has three iterations."""
    return [index // 3 for index in range(points)]


def test_with_iterations_a_step_in_the_newest_report_is_left_to_the_thresholds() -> None:
    """The step begins at the newest report's first iteration, not at its last point."""
    series = [100.0] * 30 + [150.0] * 3
    assert raised_at(judge(series, [])) == [30]  # were each point a report of its own
    assert judge(series, [], three_a_report(33)) == []


def test_with_iterations_the_window_edge_counts_reports() -> None:
    """Two reports (six points) before the step are the window's edge; three are enough."""
    assert MIN_BEFORE == 3
    edge = [100.0] * 6 + noisy(0, (150.0, 30))
    assert raised_at(judge(edge, [])) == [6]
    assert judge(edge, [], three_a_report(36)) == []
    seen = [100.0] * 9 + noisy(0, (150.0, 30))
    assert raised_at(judge(seen, [], three_a_report(39))) == [9]


def test_with_iterations_a_dismissed_step_reopens_after_reports_not_points() -> None:
    """Dismissed after the step's first report: five more reports re-open it, not five points."""
    series = noisy(0, (100.0, 30), (110.0, 18))
    dismissed = threshold_alert(30, dismissed_before=33)
    reports = three_a_report(48)
    assert judge(series[:45], [dismissed], reports[:45]) == []  # four reports after: 12 points
    [action] = judge(series, [dismissed], reports)
    assert isinstance(action, Reopen) and action.change.index == 30
