"""A metric's raw samples, bounded: what is kept of them and what summarizes the rest.

A metric's samples are every value it was made of: its harness's own per-sample figures
(pyperf's values, Criterion's and Google Benchmark's repetitions, hyperfine's times,
pytest-benchmark's data) and, when ``settings.fold`` folded several iterations into one
metric, every iteration's value. At most ``CAP`` of them are kept per metric, picked evenly
over the order they came in (so a long run's warm-up or drift stays represented); ``count``,
``minimum`` and ``maximum`` always describe all of them (docs/reference/thresholds.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

CAP = 1000
"""The most samples kept per metric."""


@dataclass(frozen=True)
class Samples:
    values: tuple[float, ...]
    """Those kept: all of them, or ``CAP`` picked evenly when there were more."""
    count: int
    minimum: float
    maximum: float

    @property
    def cut(self) -> bool:
        """Whether some samples were left out (only ``count``, ``minimum`` and ``maximum``
        speak for them)."""
        return self.count > len(self.values)


def bounded(values: Sequence[float], cap: int = CAP) -> Samples:
    """``values`` (at least one) kept up to ``cap``, summarized whole."""
    if not values:
        raise ValueError("a metric's samples hold at least one value")
    count = len(values)
    kept = tuple(values) if count <= cap else tuple(values[i * count // cap] for i in range(cap))
    return Samples(kept, count, min(values), max(values))
