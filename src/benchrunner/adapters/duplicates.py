"""One result per benchmark and measure, as Bencher's results map keeps them.

A harness can print the same benchmark twice in one run (``go test -count 3``, Google
Benchmark's repetitions, two ``Benchmark.bm`` blocks with a label in common). Bencher collects
results into a map keyed by benchmark and measure, so a later result replaces an earlier one.
"""

from __future__ import annotations

from collections.abc import Iterable

from benchrunner.adapters.base import Measurement


def keep_last(measurements: Iterable[Measurement]) -> list[Measurement]:
    """The last measurement of each (benchmark, measure), in the place of its first."""
    kept: dict[tuple[str, str], Measurement] = {}
    for measurement in measurements:
        kept[(measurement.benchmark, measurement.measure)] = measurement
    return list(kept.values())
