"""Duets: the run order, the pairing of rounds and the bootstrap verdict."""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchrunner.core.duet_order import order_text, round_orders, run_sequence
from benchrunner.detection.duet import (
    alert_limit,
    another_duet,
    estimate_duet,
    paired_ratios,
    pooled_interval,
    ratio_interval,
)

KEY = ("bench", "latency")


def test_round_orders_are_seeded_and_use_both_orders() -> None:
    orders = round_orders(7, 40)
    assert orders == round_orders(7, 40)
    assert orders != round_orders(8, 40)
    assert {o for o in orders} == {("baseline", "contender"), ("contender", "baseline")}


def test_run_sequence_runs_each_side_once_per_round() -> None:
    sequence = run_sequence(3, 5)
    assert len(sequence) == 10
    for index in range(5):
        assert sorted(side for r, side in sequence if r == index) == ["baseline", "contender"]
    assert order_text(sequence) == " ".join(
        "AB" if first == "baseline" else "BA" for first, _ in round_orders(3, 5)
    )


@pytest.mark.parametrize(
    ("baseline", "contender", "expected"),
    [
        ({0: {KEY: 2.0}, 1: {KEY: 4.0}}, {0: {KEY: 3.0}, 1: {KEY: 2.0}}, [1.5, 0.5]),
        ({0: {KEY: 2.0}}, {0: {KEY: 3.0}, 1: {KEY: 9.0}}, [1.5]),  # round 1 has no baseline
        ({0: {KEY: 0.0}, 1: {KEY: 1.0}}, {0: {KEY: 3.0}, 1: {KEY: 2.0}}, [2.0]),  # not positive
        ({0: {("other", "latency"): 1.0}}, {0: {KEY: 1.0}}, None),  # nothing in common
    ],
)
def test_paired_ratios(
    baseline: dict[int, dict[tuple[str, str], float]],
    contender: dict[int, dict[tuple[str, str], float]],
    expected: list[float] | None,
) -> None:
    assert paired_ratios(baseline, contender).get(KEY) == expected


def _rounds(
    rounds: int, slowdown: float, noise: float, seed: int
) -> tuple[dict[int, dict[tuple[str, str], float]], dict[int, dict[tuple[str, str], float]]]:
    """A machine whose speed drifts a lot from round to round (shared by both sides of a
    round) and a little within a round: what an interleaved duet sees."""
    rng = np.random.default_rng(seed)
    drift = 100.0 * (1 + 0.2 * rng.random(rounds))
    base = drift * (1 + noise * rng.standard_normal(rounds))
    cont = drift * (1 + slowdown) * (1 + noise * rng.standard_normal(rounds))
    return (
        {i: {KEY: float(v)} for i, v in enumerate(base)},
        {i: {KEY: float(v)} for i, v in enumerate(cont)},
    )


@pytest.mark.parametrize("seed", range(5))
def test_a_one_percent_slowdown_with_low_noise_is_detected(seed: int) -> None:
    baseline, contender = _rounds(20, 0.01, 0.002, seed)
    (found,) = estimate_duet(
        baseline, contender, confidence=0.95, resamples=5000, seed=seed, margin=0.0
    )
    assert found.rounds == 20
    assert found.ratio == pytest.approx(1.01, abs=0.002)
    assert 1 < found.lower < found.ratio < found.upper
    assert found.limit == "upper"


@pytest.mark.parametrize("seed", range(5))
def test_a_few_delayed_runs_do_not_hide_a_one_percent_slowdown(seed: int) -> None:
    """Wall time on a core something else interrupts: most runs are the work alone, a few wait
    whole scheduler ticks (here +50 %), on either side. The estimate follows the many."""
    baseline, contender = _rounds(30, 0.01, 0.002, seed)
    delayed = np.random.default_rng(seed).choice(30, size=6, replace=False)
    for index, round_index in enumerate(delayed):
        side = baseline if index % 2 else contender
        side[int(round_index)][KEY] *= 1.5
    (found,) = estimate_duet(
        baseline, contender, confidence=0.95, resamples=5000, seed=seed, margin=0.0
    )
    assert found.ratio == pytest.approx(1.01, abs=0.003)
    assert found.lower > 1 and found.limit == "upper"
    assert found.upper < 1.03


@pytest.mark.parametrize("seed", range(5))
def test_no_difference_raises_nothing(seed: int) -> None:
    baseline, contender = _rounds(20, 0.0, 0.002, seed)
    (found,) = estimate_duet(
        baseline, contender, confidence=0.95, resamples=5000, seed=seed, margin=0.0
    )
    assert found.lower <= 1 <= found.upper
    assert found.limit is None


def test_the_margin_holds_back_a_change_smaller_than_it() -> None:
    baseline, contender = _rounds(20, 0.01, 0.002, 0)
    (found,) = estimate_duet(
        baseline, contender, confidence=0.95, resamples=5000, seed=0, margin=0.02
    )
    assert found.lower > 1 and found.limit is None


def test_a_speedup_is_a_lower_limit_alert() -> None:
    baseline, contender = _rounds(20, -0.03, 0.002, 1)
    (found,) = estimate_duet(
        baseline, contender, confidence=0.95, resamples=2000, seed=1, margin=0.01
    )
    assert found.upper < 0.99 and found.limit == "lower"


def test_the_interval_is_reproducible_from_its_seed_and_widens_with_confidence() -> None:
    ratios = [1.0, 1.02, 0.99, 1.03, 1.01, 0.98, 1.02]
    first = ratio_interval(ratios, confidence=0.9, resamples=2000, seed=5)
    assert first == ratio_interval(ratios, confidence=0.9, resamples=2000, seed=5)
    wider = ratio_interval(ratios, confidence=0.99, resamples=2000, seed=5)
    assert wider[1] < first[1] and wider[2] > first[2]
    assert first[0] == pytest.approx(float(np.exp(np.median(np.log(ratios)))))


def test_one_round_gives_a_zero_width_interval_and_no_ratios_are_refused() -> None:
    assert ratio_interval([1.5], confidence=0.95, resamples=100, seed=0) == (1.5, 1.5, 1.5)
    with pytest.raises(ValueError, match="no ratios"):
        ratio_interval([], confidence=0.95, resamples=100, seed=0)


@pytest.mark.parametrize(
    ("lower", "upper", "margin", "expected"),
    [
        (1.02, 1.05, 0.01, "upper"),
        (1.005, 1.05, 0.01, None),
        (0.95, 0.98, 0.01, "lower"),
        (0.95, 0.995, 0.01, None),
        (0.99, 1.01, 0.0, None),
        (1.0001, 1.01, 0.0, "upper"),
    ],
)
def test_alert_limit(lower: float, upper: float, margin: float, expected: str | None) -> None:
    assert alert_limit(lower, upper, margin) == expected


def test_only_an_unknown_answer_within_the_rounds_earns_another_duet() -> None:
    assert another_duet("unknown", 50, 50)
    assert not another_duet("unknown", 60, 50)
    assert not another_duet("same", 20, 50)
    assert not another_duet("different", 20, 50)


def test_one_duets_interval_pools_as_it_is_and_none_is_refused() -> None:
    assert pooled_interval([(1.1, 1.0, 1.2)], confidence=0.95) == (1.1, 1.0, 1.2)
    with pytest.raises(ValueError):
        pooled_interval([], confidence=0.95)


def test_pooled_duets_narrow_as_one_duet_of_all_their_rounds_would() -> None:
    """Duets of the same versions: pooled, the interval is about as wide as one duet's of all
    the rounds, and far narrower than any one of them."""
    rng = np.random.default_rng(5)
    ratios = [float(r) for r in np.exp(rng.normal(np.log(1.05), 0.03, 200))]
    duets = [
        ratio_interval(ratios[i : i + 20], confidence=0.95, resamples=4000, seed=i)
        for i in range(0, 200, 20)
    ]
    ratio, lower, upper = pooled_interval(duets, confidence=0.95)
    _, whole_lower, whole_upper = ratio_interval(ratios, confidence=0.95, resamples=4000, seed=1)
    assert lower < 1.05 < upper
    width = np.log(upper / lower)
    assert width == pytest.approx(np.log(whole_upper / whole_lower), rel=0.2)
    assert width < np.mean([np.log(u / lo) for _, lo, u in duets]) / 2.5  # sqrt(10): 3.2
    assert ratio == pytest.approx(1.05, abs=0.01)


def test_pooled_weighs_each_duet_by_its_precision() -> None:
    """A narrow duet counts for more than a wide one; a zero-width one counts for nearly all."""
    ratio, _, _ = pooled_interval([(1.0, 0.9, 1.1), (1.2, 1.19, 1.21)], confidence=0.95)
    assert 1.19 < ratio < 1.2
    ratio, lower, _ = pooled_interval([(1.0, 0.9, 1.1), (1.3, 1.3, 1.3)], confidence=0.95)
    assert ratio == pytest.approx(1.3) and lower == pytest.approx(1.3, abs=1e-4)


def test_a_pooled_interval_judged_at_several_looks_is_wider_by_bonferronis_bound() -> None:
    """One duet of a confirmation that may look five times: its 95 % interval (standard error
    0.05 on the log scale) widened to 99 %, about its centre."""
    z95, z99 = 1.959964, 2.575829
    ratio, lower, upper = pooled_interval(
        [(1.0, math.exp(-z95 * 0.05), math.exp(z95 * 0.05))], confidence=0.95, looks=5
    )
    assert ratio == 1.0
    assert (lower, upper) == pytest.approx((math.exp(-z99 * 0.05), math.exp(z99 * 0.05)))
