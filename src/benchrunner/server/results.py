"""Adapter measurements -> the metrics a report stores, as Bencher turns results into metrics:
iterations folded into one when ``settings.fold`` says so, and benchmarks whose name ends in
``-bencher-ignore`` dropped (Bencher's convention for a benchmark not to track)."""

from __future__ import annotations

from collections.abc import Sequence

from benchrunner.adapters.base import Fold, Measurement
from benchrunner.adapters.fold import fold as fold_iterations
from benchrunner.server.store.reports import MetricValue

IGNORE_SUFFIX = "-bencher-ignore"


def report_metrics(
    iterations: Sequence[Sequence[Measurement]], fold: Fold | None
) -> list[MetricValue]:
    """The metrics of a report from each iteration's measurements (iteration i's metrics have
    ``iteration`` i; folded, there is one iteration, 0)."""
    folded = [fold_iterations(iterations, fold)] if fold is not None and iterations else iterations
    return [
        MetricValue(index, m.benchmark, m.measure, m.value, m.lower_value, m.upper_value)
        for index, measurements in enumerate(folded)
        for m in measurements
        if not m.benchmark.endswith(IGNORE_SUFFIX)
    ]
