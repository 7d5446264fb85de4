"""Adapter measurements -> the metrics a report stores: iterations folded into one when
``settings.fold`` says so, as Bencher folds them. (``adapters.parse`` has already kept one
measurement per benchmark and measure and dropped ``-bencher-ignore`` benchmarks.)"""

from __future__ import annotations

from collections.abc import Sequence

from benchrunner.adapters.base import Fold, Measurement
from benchrunner.adapters.fold import fold as fold_iterations
from benchrunner.server.store.reports import MetricValue


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
    ]
