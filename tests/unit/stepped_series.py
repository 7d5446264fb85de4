"""A project's history of reports whose values step between levels, for tests of the
judgment's and the look-back's writes."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Sequence

import numpy as np
from sqlalchemy.engine import Engine

from benchrunner.core.tiers import Plan
from benchrunner.detection.models import Model
from benchrunner.server.store import accounts, reports, thresholds
from benchrunner.server.store.reports import MetricValue, StoredMetric
from tests.new_reports import new_report_on

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


@dataclasses.dataclass(frozen=True)
class Series:
    project_id: int
    key: thresholds.SeriesKey
    """The threshold's series (the first benchmark's measure)."""
    made: list[tuple[int, list[StoredMetric]]]
    """Each report, oldest first, with its metrics."""


def stepped_series(
    engine: Engine,
    benchmarks: int,
    levels: Sequence[tuple[float, int]],
    model: Model,
    *,
    seed: int,
) -> Series:
    """A project whose ``benchmarks`` benchmarks on main each run through ``levels``
    ((level, reports) with 1 % noise drawn from ``seed``), a report an hour from ``T0``, none
    judged, and a threshold of ``model``."""
    rng = np.random.default_rng(seed)
    made: list[tuple[int, list[StoredMetric]]] = []
    with engine.begin() as conn:
        leader = accounts.user_get_or_create(conn, "l@x", "l", admin=False, now=T0).id
        org = accounts.organization_create(conn, "org", Plan.TEAM, T0, leader_id=leader)
        project = accounts.project_create(conn, org.id, "p", "public", T0).id
        new = new_report_on(conn, project, "main", "box", "json", T0)
        hour = 0
        for level, count in levels:
            for _ in range(count):
                at = T0 + dt.timedelta(hours=hour)
                hour += 1
                timed = dataclasses.replace(new, start_time=at, end_time=at, now=at)
                report_id, _ = reports.report_create(conn, timed)
                values = [
                    MetricValue(
                        0, f"b{k}", "latency", level * float(rng.normal(1, 0.01)), None, None
                    )
                    for k in range(benchmarks)
                ]
                made.append((report_id, reports.metrics_add(conn, report_id, project, values, at)))
        measure_id = made[0][1][0].measure_id
        key = thresholds.SeriesKey(new.branch_id, new.testbed_id, measure_id, None)
        thresholds.threshold_put(conn, project, key, model, T0)
    return Series(project, key, made)
