"""Seeded series for the recorded change points (``test_detection_change_point``): every
shape the detector meets (flat noise, steps, a step at the newest value, ties, constant
segments, iterations, heavy noise), of several lengths, under several parameters."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

RECORDED = Path(__file__).with_name("change_points_recorded.json")


@dataclass(frozen=True)
class Case:
    seed: int
    series: list[float]
    parameters: dict[str, Any]


_PARAMETERS: list[dict[str, Any]] = [
    {},
    {"window": 20, "max_pvalue": 0.05, "min_magnitude": 0.02},
    {"max_pvalue": 0.01},
]
_LENGTHS = [60, 60, 60, 7, 31, 200]


def _series(seed: int) -> list[float]:
    rng = np.random.default_rng(1000 + seed)
    size = _LENGTHS[seed % len(_LENGTHS)]
    shape = seed % 8
    level = float(rng.uniform(10, 1000))
    if shape == 0:  # flat, 1 % noise
        values = rng.normal(level, level / 100, size)
    elif shape == 1:  # one step of 5-20 %
        at = int(rng.integers(1, size))
        values = rng.normal(level, level / 100, size)
        values[at:] *= 1 + rng.uniform(0.05, 0.2) * rng.choice([-1, 1])
    elif shape == 2:  # two steps
        first, second = sorted(int(i) for i in rng.choice(np.arange(1, size), 2, replace=False))
        values = rng.normal(level, level / 100, size)
        values[first:] *= 1.1
        values[second:] *= 0.85
    elif shape == 3:  # a step at the newest value
        values = rng.normal(level, level / 100, size)
        values[-1] *= 1.3
    elif shape == 4:  # few distinct values: ties everywhere
        values = np.round(rng.normal(10, 1, size))
        values[size // 2 :] += 2
    elif shape == 5:  # constant segments
        values = np.full(size, level)
        values[size // 3 :] = level * 1.2
    elif shape == 6:  # three iterations per report, a step half way
        reports = rng.normal(level, level / 100, (size + 2) // 3)
        reports[len(reports) // 2 :] *= 1.15
        values = np.repeat(reports, 3)[:size] * rng.normal(1, 0.001, size)
    else:  # 10 % noise, a 10 % step
        values = rng.normal(level, level / 10, size)
        values[size // 2 :] *= 1.1
    return [float(x) for x in values]


def cases() -> list[Case]:
    return [Case(seed, _series(seed), _PARAMETERS[seed % len(_PARAMETERS)]) for seed in range(96)]
