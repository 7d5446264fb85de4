"""The perf page's duet panel (docs/decisions/noise.md): the contender/baseline ratios of the chosen
series (``store.duets.duet_points``), shown apart from the absolute charts, never mixed into them.

A ratio is drawn as ``perf_chart`` draws an absolute point: one chart per measure, one line per
branch, testbed and benchmark, the bootstrap interval as the band around it and an alert as a
marker (a duet's alert has no alert row of its own: the marker names its report). The same
ratios are the rows of the panel's table, for the page without JavaScript.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

from benchrunner.server.console.perf_chart import EPOCH, Chart, Named, Names, build_charts
from benchrunner.server.store.duets import DuetPoint
from benchrunner.server.store.perf import PlotAlert, PlotPoint
from benchrunner.server.views.duet import duet_verdict


class DuetRow(NamedTuple):
    """A ratio as the panel's table shows it, its cells already text."""

    start_time: str
    benchmark: str
    branch: str
    testbed: str
    rounds: int
    ratio: str
    change: str
    lower: str
    upper: str
    verdict: str
    alert: str | None
    report: str


@dataclass(frozen=True)
class DuetPanel:
    chart: Chart
    rows: list[DuetRow]

    @property
    def alerts(self) -> int:
        return sum(1 for row in self.rows if row.alert is not None)


def _alert_of(p: DuetPoint) -> PlotAlert | None:
    """The alert row a ratio beyond its margin raised, as the plot marks it."""
    if p.limit is None or p.alert_uuid is None or p.alert_status is None:
        return None
    return PlotAlert(p.alert_uuid, p.limit, p.alert_status)


def _plotted(k: int, p: DuetPoint) -> PlotPoint:
    """Ratio ``k`` of a panel as a plotted point, its report and its alert named by ``k``."""
    return PlotPoint(
        branch_id=p.branch_id,
        testbed_id=p.testbed_id,
        benchmark_id=p.benchmark_id,
        measure_id=p.measure_id,
        report_id=k,
        start_us=(p.start_time - EPOCH) // dt.timedelta(microseconds=1),
        iteration=0,
        value=p.ratio,
        baseline=None,
        lower_limit=p.lower_value,
        upper_limit=p.upper_value,
        alert_id=None if _alert_of(p) is None else k,
        noisy=0,
    )


def _row(p: DuetPoint, names: Names) -> DuetRow:
    return DuetRow(
        start_time=p.start_time.isoformat(sep=" ", timespec="seconds")[:19],
        benchmark=names.benchmarks[p.benchmark_id].name,
        branch=names.branches[p.branch_id].name,
        testbed=names.testbeds[p.testbed_id].name,
        rounds=p.rounds,
        ratio=f"{p.ratio:.4f}",
        change=f"{(p.ratio - 1) * 100:+.2f}%",
        lower=f"{p.lower_value:.4f}",
        upper=f"{p.upper_value:.4f}",
        verdict=duet_verdict(p.lower_value, p.upper_value, p.limit),
        alert=p.limit,
        report=str(p.report_uuid),
    )


def build_duet_panels(points: Iterable[DuetPoint], names: Names) -> list[DuetPanel]:
    """One panel per measure that has ratios, in the measures' order in ``names``."""
    by_measure: dict[int, list[DuetPoint]] = {}
    for p in points:
        by_measure.setdefault(p.measure_id, []).append(p)
    panels = []
    for measure_id in names.measures:
        found = by_measure.get(measure_id)
        if not found:
            continue
        named = Named(
            reports={k: p.report_uuid for k, p in enumerate(found)},
            alerts={k: a for k, p in enumerate(found) if (a := _alert_of(p)) is not None},
        )
        [chart] = build_charts([_plotted(k, p) for k, p in enumerate(found)], names, named)
        chart.kind = "duet"
        chart.rows = []  # rows of the absolute table: the panel has its own
        panels.append(DuetPanel(chart, [_row(p, names) for p in found]))
    return panels
