"""``limits_many`` draws exactly what ``limits`` draws of each history alone, to the last bit:
the same verdict for every metric, whether a report's series are judged together or apart."""

from __future__ import annotations

import random

import pytest

from benchrunner.detection import Model, TestKind
from benchrunner.detection.boundary import limits, limits_many

T = TestKind

MODELS = [
    Model(T.T_TEST, min_sample_size=2, max_sample_size=64, upper_boundary=0.99),
    Model(T.T_TEST, max_sample_size=30, lower_boundary=0.9, upper_boundary=0.999),
    Model(T.T_TEST, min_sample_size=5, lower_boundary=0.95),
    Model(T.Z_SCORE, max_sample_size=64, lower_boundary=0.977, upper_boundary=0.977),
    Model(T.Z_SCORE, min_sample_size=3, upper_boundary=0.5),
    Model(T.PERCENTAGE, max_sample_size=20, lower_boundary=0.1, upper_boundary=0.25),
    Model(T.PERCENTAGE, min_sample_size=2, upper_boundary=0.0),
    Model(T.STATIC, lower_boundary=-5.0, upper_boundary=5.0),
    Model(T.STATIC, upper_boundary=7.5),
    Model(T.LOG_NORMAL, max_sample_size=64, lower_boundary=0.9, upper_boundary=0.99),
    Model(T.IQR, max_sample_size=64, lower_boundary=1.5, upper_boundary=1.5),
    Model(T.DELTA_IQR, upper_boundary=2.0),
    Model(T.CHANGE_POINT),
]


def _histories(seed: int) -> list[list[float]]:
    """Noisy series of every length up to past the sample size, at several scales, and the
    edges: empty, one value, constant, zeros, negatives, values near the largest float."""
    rng = random.Random(seed)
    found: list[list[float]] = [[], [3.0], [2.0] * 40, [0.0] * 64, [-1.0, 1.0] * 20]
    found.append([1.7e308, 1.6e308, 1.5e308])
    found.append([1e-300, 2e-300, 3e-300, 5e-300])
    for _ in range(400):
        size = rng.choice([rng.randint(1, 130), 64, 64, 70])
        scale = rng.choice([1e-6, 1.0, 123.456, 1e9, 1e300])
        spread = rng.choice([0.0, 1e-12, 0.01, 0.5])
        found.append([scale * rng.gauss(1.0, spread) for _ in range(size)])
    return found


@pytest.mark.parametrize("model", MODELS, ids=lambda m: f"{m.test}")
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_limits_many_draws_what_limits_draws_of_each(model: Model, seed: int) -> None:
    histories = _histories(seed)
    together = limits_many(model, histories)
    apart = [limits(model, history) for history in histories]
    mismatches = [
        (len(h), a, b) for h, a, b in zip(histories, together, apart, strict=True) if a != b
    ]
    assert mismatches == []
    assert any(drawn is not None for drawn in apart) or model.test is T.CHANGE_POINT


def test_limits_many_of_no_histories_is_empty() -> None:
    assert limits_many(MODELS[0], []) == []
