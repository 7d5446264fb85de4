"""``limits_many`` draws exactly what it drew of each history alone before it drew many at once,
to the last bit (recorded digests), and the same for every metric whether a report's series are
judged together or apart."""

from __future__ import annotations

import hashlib
import random

import pytest

from benchrunner.detection import Limits, Model, TestKind
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


RECORDED_DIGESTS = [
    ["9c135114e4ef297c", "6dc45ff4b11f798d", "7d54ff8101bd2a12"],
    ["daae6d241be8f141", "dd8a52ae31055d67", "53b24012bc290ddf"],
    ["b0823813c8813830", "f383953452b5f158", "9e9555656e80ded6"],
    ["a29b37e48077afe2", "93c23fd048effcbd", "04334e7930a705aa"],
    ["3b92a1b72d681e9d", "08d8e7bf7327992f", "8b06996bce525a62"],
    ["78935604fdc47708", "37e124108f89fef9", "b4a6e1705a16ff74"],
    ["ee170d4b4a8d5e3d", "abb6a7d81bd5345a", "b773abc37b045184"],
    ["237e1d5267b2ddd1", "237e1d5267b2ddd1", "237e1d5267b2ddd1"],
    ["e060ff4169837f5e", "e060ff4169837f5e", "e060ff4169837f5e"],
    ["3b42d954a0e6ea59", "66ed8050da07baf8", "841ea8aade743143"],
    ["72136a2e109a7829", "0362f34b6e416fee", "d6e7aa81100980d8"],
    ["ed5fe2d0ee1fe0f6", "11afafad861eb386", "cc950b87012259d1"],
    ["c8bc2c41753ab042", "c8bc2c41753ab042", "c8bc2c41753ab042"],
]
"""Per model (in ``MODELS``' order) and seed 1, 2, 3: the first 16 hex digits of the SHA-256 of
the ``repr`` of every history's (baseline, lower, upper), or None, each history drawn alone, as
the single-history draw computed them when it still existed beside ``limits_many``. The
log-normal draw's figures are hashed to 9 significant digits (``_canonical``)."""

ROUNDED = {T.LOG_NORMAL}
"""Models whose figures go through NumPy's ``log`` and ``exp``, which take the processor's vector
instructions: their last bits differ from one processor to another (an Intel Xeon with AVX-512
against an AMD EPYC), where every other model's draw is the same to the last bit on both."""


def _canonical(model: Model, value: float | None) -> float | None:
    if value is None or model.test not in ROUNDED:
        return value
    return float(f"{value:.9g}")


@pytest.mark.parametrize(
    ("model", "digests"), list(zip(MODELS, RECORDED_DIGESTS, strict=True)), ids=lambda m: f"{m}"
)
def test_limits_are_the_recorded_ones_to_the_last_bit(model: Model, digests: list[str]) -> None:
    for seed, recorded in zip([1, 2, 3], digests, strict=True):
        digest = hashlib.sha256()
        for history in _histories(seed):
            drawn = limits(model, history)
            as_tuple = (
                None
                if drawn is None
                else tuple(_canonical(model, value) for value in drawn_tuple(drawn))
            )
            digest.update(repr(as_tuple).encode())
        assert digest.hexdigest()[:16] == recorded, seed


def drawn_tuple(drawn: Limits) -> tuple[float | None, float | None, float | None]:
    return drawn.baseline, drawn.lower_limit, drawn.upper_limit


def test_limits_many_of_no_histories_is_empty() -> None:
    assert limits_many(MODELS[0], []) == []
