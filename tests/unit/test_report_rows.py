"""The newest reports' rows kept between judgments (``store.report_rows.ReportRows``) are
always the rows a plain read finds now, on both engines: after a metric added to a held
report, its newest metric deleted, a metric replaced, a report deleted, and a report deleted
and made again under its id with metrics of the same ids; unchanged reports are served
without reading their rows again. A report judged through the cache gets the verdicts it gets
without it, over histories with gaps, reports of two iterations, fewer reports than the
sample size and two measures."""

from __future__ import annotations

import dataclasses
import datetime as dt
import random
import uuid
from typing import Any

import numpy as np
import pytest
import sqlalchemy as sa
from numpy.typing import NDArray
from sqlalchemy.engine import Connection, Engine

from benchrunner.core.tiers import Plan
from benchrunner.detection.models import Model, TestKind
from benchrunner.server.processing.evaluation import judge_report
from benchrunner.server.processing.verdicts import Verdicts
from benchrunner.server.store import (
    accounts,
    capabilities,
    history,
    report_rows,
    reports,
    thresholds,
)
from benchrunner.server.store.reports import MetricValue, StoredMetric
from benchrunner.server.store.tables import benchmark, metric, report
from tests.new_reports import new_report_on

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


@dataclasses.dataclass
class Project:
    id: int
    new: reports.NewReport
    report_ids: list[int]
    measure_ids: list[int]


def _values(rng: random.Random, iteration: int, gaps: bool) -> list[MetricValue]:
    values = []
    for b in range(5):
        if gaps and b == 0 and rng.random() < 0.5:
            continue  # a benchmark missing from half the reports
        for measure in ("latency", "memory"):
            value = (100.0 + 10 * b) * rng.gauss(1, 0.02)
            values.append(MetricValue(iteration, f"b{b}", measure, value, None, None))
    return values


def _report(
    conn: Connection, project: Project, at: dt.datetime, rng: random.Random, gaps: bool = True
) -> tuple[int, list[StoredMetric]]:
    timed = dataclasses.replace(project.new, start_time=at, end_time=at, now=at)
    report_id, _ = reports.report_create(conn, timed)
    stored: list[StoredMetric] = []
    for iteration in range(rng.choice((1, 1, 2))):
        stored += reports.metrics_add(
            conn, report_id, project.id, _values(rng, iteration, gaps), at
        )
    project.report_ids.append(report_id)
    return report_id, stored


def _project(engine: Engine, reports_made: int, rng: random.Random) -> Project:
    with engine.begin() as conn:
        leader = accounts.user_get_or_create(conn, "l@x", "l", admin=False, now=T0).id
        org = accounts.organization_create(conn, "org", Plan.TEAM, T0, leader_id=leader)
        project_id = accounts.project_create(conn, org.id, "p", "public", T0).id
        new = new_report_on(conn, project_id, "main", "box", "json", T0)
        project = Project(project_id, new, [], [])
        for k in range(reports_made):
            _report(conn, project, T0 + dt.timedelta(hours=k), rng)
        project.measure_ids = sorted(
            {int(m) for m in conn.execute(sa.select(metric.c.measure_id).distinct()).scalars()}
        )
    return project


def _sorted(rows: NDArray[Any]) -> list[tuple[Any, ...]]:
    return sorted(rows.tolist())


class Reads:
    """Counts the statements that read metrics' rows."""

    def __init__(self, engine: Engine) -> None:
        self.count = 0
        sa.event.listen(engine, "before_cursor_execute", self)

    def __call__(self, _conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if "string_agg" in statement or statement.startswith("SELECT metric.measure_id"):
            self.count += 1


def _check(
    engine: Engine, cache: report_rows.ReportRows, ids: list[int], measures: list[int] | None
) -> None:
    with engine.connect() as conn:
        cached = cache.rows(conn, ids, measures, 10.0)
        plain = report_rows.read(conn, ids, measures, 10.0)
    assert _sorted(cached) == _sorted(plain)
    assert len(plain) > 0


def test_held_rows_are_always_what_a_read_finds_now(engine: Engine) -> None:
    project = _project(engine, 12, random.Random(3))
    cache = report_rows.ReportRows()
    reads = Reads(engine)
    ids = project.report_ids[::-1]
    measures = project.measure_ids
    _check(engine, cache, ids, measures)
    reads.count = 0
    _check(engine, cache, ids, measures)
    assert reads.count == 1  # the plain read only: every report served from the cache
    _check(engine, cache, ids, measures[:1])  # one measure of those held
    _check(engine, cache, ids, None)

    newest = ids[0]
    with engine.begin() as conn:  # a metric added to a held report
        conn.execute(
            metric.insert(),
            {"uuid": uuid.uuid4(), "report_id": ids[3], "iteration": 5, "benchmark_id":
             _any(conn, "benchmark_id"), "measure_id": measures[0], "value": 1e6},
        )  # fmt: skip
    reads.count = 0
    _check(engine, cache, ids, measures)
    assert reads.count == 2  # the changed report read again, and the plain read

    with engine.begin() as conn:  # the newest metric deleted
        last = conn.execute(sa.select(sa.func.max(metric.c.id))).scalar_one()
        conn.execute(metric.delete().where(metric.c.id == last))
    _check(engine, cache, ids, measures)

    with engine.begin() as conn:  # a metric replaced by one more: as many metrics
        oldest = conn.execute(
            sa.select(sa.func.min(metric.c.id)).where(metric.c.report_id == ids[5])
        ).scalar_one()
        row = conn.execute(sa.select(metric).where(metric.c.id == oldest)).one()._asdict()
        conn.execute(metric.delete().where(metric.c.id == oldest))
        del row["id"]
        conn.execute(metric.insert(), {**row, "uuid": uuid.uuid4(), "value": -1.0})
    _check(engine, cache, ids, measures)

    with engine.begin() as conn:  # a report deleted
        conn.execute(metric.delete().where(metric.c.report_id == ids[7]))
        conn.execute(report.delete().where(report.c.id == ids[7]))
    _check(engine, cache, ids, measures)

    # the newest report deleted and made again under its id, its metrics under theirs, with
    # other values: only its uuid tells
    with engine.begin() as conn:
        old_report = conn.execute(sa.select(report).where(report.c.id == newest)).one()
        old_metrics = conn.execute(sa.select(metric).where(metric.c.report_id == newest)).all()
        conn.execute(metric.delete().where(metric.c.report_id == newest))
        conn.execute(report.delete().where(report.c.id == newest))
        conn.execute(report.insert(), {**old_report._asdict(), "uuid": uuid.uuid4()})
        conn.execute(
            metric.insert(),
            [{**m._asdict(), "uuid": uuid.uuid4(), "value": m.value * 2.0} for m in old_metrics],
        )
    _check(engine, cache, ids, measures)


def _any(conn: Connection, column: str) -> int:
    found: int = conn.execute(sa.select(getattr(metric.c, column)).limit(1)).scalar_one()
    return found


def test_a_cache_keeps_at_most_its_rows_and_reads_the_rest(engine: Engine) -> None:
    project = _project(engine, 10, random.Random(4))
    cache = report_rows.ReportRows(max_rows=25)
    ids = project.report_ids[::-1]
    for _ in range(3):
        _check(engine, cache, ids, project.measure_ids)
        assert cache._rows <= 25


def _judged(engine: Engine, report_id: int, metrics: list[StoredMetric], cache: Any) -> Verdicts:
    with engine.connect() as conn:
        found = thresholds.thresholds_of_report(conn, report_id, {m.measure_id for m in metrics})
        reads = history.SeriesReads(cache)
        return judge_report(conn, report_id, metrics, found=found, reads=reads)


@pytest.mark.parametrize("history_reports", [3, 20])
@pytest.mark.parametrize(
    "model",
    [
        Model(TestKind.T_TEST, min_sample_size=2, max_sample_size=8, upper_boundary=0.99),
        Model(TestKind.PERCENTAGE, max_sample_size=6, upper_boundary=0.01),
        Model(TestKind.CHANGE_POINT, max_sample_size=10),
    ],
)
def test_a_report_judged_through_the_cache_gets_the_same_verdicts(
    engine: Engine, history_reports: int, model: Model
) -> None:
    """Reports judged one after another (each the next one's history), a held report's
    metrics measured again, a report deleted and a benchmark ignored between them: the same
    verdicts through the cache as without it, and none on the ignored benchmark."""
    rng = random.Random(history_reports)
    project = _project(engine, history_reports, rng)
    with engine.begin() as conn:
        for measure_id in project.measure_ids:
            key = thresholds.SeriesKey(project.new.branch_id, project.new.testbed_id, measure_id)
            thresholds.threshold_put(conn, project.id, key, model, T0)
    cache = report_rows.ReportRows()
    hour = history_reports
    compared = 0
    for step in range(4):
        with engine.begin() as conn:
            if step == 1:  # a held report's metrics measured again, higher
                held = project.report_ids[-1]
                rows = conn.execute(sa.select(metric).where(metric.c.report_id == held)).all()
                conn.execute(metric.delete().where(metric.c.report_id == held))
                again = [{**r._asdict(), "uuid": uuid.uuid4(), "value": r.value * 3} for r in rows]
                conn.execute(metric.insert(), [{k: v for k, v in r.items() if k != "id"}
                                               for r in again])  # fmt: skip
            if step == 2:  # a report of the history deleted
                doomed = project.report_ids[-2]
                conn.execute(metric.delete().where(metric.c.report_id == doomed))
                conn.execute(report.delete().where(report.c.id == doomed))
            if step == 3:  # a benchmark ignored: never judged
                conn.execute(
                    benchmark.update().where(benchmark.c.name == "b1").values(ignored=True)
                )
            report_id, stored = _report(conn, project, T0 + dt.timedelta(hours=hour), rng)
            hour += 1
        cached = _judged(engine, report_id, stored, cache)
        plain = _judged(engine, report_id, stored, None)
        assert cached.units == plain.units
        with engine.connect() as conn:
            ignored = set(
                conn.execute(sa.select(benchmark.c.id).where(benchmark.c.ignored)).scalars()
            )
        judged = {b.metric_id for u in plain.units for b in u.boundaries}
        assert judged >= {m.id for m in stored if m.benchmark_id not in ignored}
        assert judged.isdisjoint(m.id for m in stored if m.benchmark_id in ignored)
        assert bool(ignored) == (step == 3)
        compared += sum(len(u.boundaries) for u in plain.units)
    assert compared > 0
    assert any(np.isfinite(b.baseline or np.nan) for u in plain.units for b in u.boundaries)


def test_a_report_read_whole_is_packed_within_packed_rows(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A report the cache lacks is read with every measure, not only those asked for: its
    packed values are sized by its metrics, not by the asked measures' (one report a value
    here, where the asked measure's would fit them all in one)."""
    project = _project(engine, 6, random.Random(5))
    ids = project.report_ids[::-1]
    with engine.connect() as conn:
        counts = conn.execute(
            sa.select(sa.func.count())
            .where(metric.c.report_id.in_(ids))
            .group_by(metric.c.report_id)
        ).scalars()
        monkeypatch.setattr(report_rows, "PACKED_ROWS", max(counts))
        reads = Reads(engine)
        cached = report_rows.ReportRows().rows(conn, ids, project.measure_ids[:1], 1.0)
        packed = capabilities.of(conn).bulk_arrays
        assert _sorted(cached) == _sorted(report_rows.read(conn, ids, project.measure_ids[:1], 1.0))
    assert reads.count == (len(ids) + 1 if packed else 2)
