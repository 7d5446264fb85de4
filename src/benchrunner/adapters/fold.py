"""``settings.fold``: several iterations' measurements folded into one, as Bencher folds them.

``min`` and ``max`` keep, per benchmark and measure, the whole metric with the smallest (largest)
value; ``mean`` adds each of value, lower and upper over the iterations and divides by the number
of iterations (an iteration without that benchmark counts as nothing added, as in Bencher);
``median`` takes the median of each of value, lower and upper over the iterations that have them.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from benchrunner.adapters.base import Fold, Measurement

Key = tuple[str, str]


def _by_key(iterations: Sequence[Sequence[Measurement]]) -> dict[Key, list[Measurement]]:
    grouped: dict[Key, list[Measurement]] = {}
    for measurements in iterations:
        for m in measurements:
            grouped.setdefault((m.benchmark, m.measure), []).append(m)
    return grouped


def _sum_over(values: list[float | None], count: int) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / count if present else None


def _median_of(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def fold(iterations: Sequence[Sequence[Measurement]], how: Fold) -> list[Measurement]:
    """One iteration's worth of measurements, in the order they first appear."""
    folded: list[Measurement] = []
    for (benchmark, measure), found in _by_key(iterations).items():
        if how == "min":
            folded.append(min(found, key=lambda m: m.value))
        elif how == "max":
            folded.append(max(found, key=lambda m: m.value))
        elif how == "mean":
            count = len(iterations)
            folded.append(
                Measurement(
                    benchmark,
                    measure,
                    sum(m.value for m in found) / count,
                    _sum_over([m.lower_value for m in found], count),
                    _sum_over([m.upper_value for m in found], count),
                )
            )
        else:
            folded.append(
                Measurement(
                    benchmark,
                    measure,
                    statistics.median(m.value for m in found),
                    _median_of([m.lower_value for m in found]),
                    _median_of([m.upper_value for m in found]),
                )
            )
    return folded
