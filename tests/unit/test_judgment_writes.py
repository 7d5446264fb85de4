"""A runner job's report is judged after its metrics committed: read and drawn outside any
write transaction, then written in short write transactions that re-check what the judgment
read (docs/reference/thresholds.md, "Scale"), on both engines. A threshold edited or a baseline
reset between the read and the write writes nothing, and the report is judged again with what
holds now; a second report of the same series, or the same report judged twice, raises no
second alert; and each write takes at most ``WRITE_ROWS`` rows on SQLite."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
from collections.abc import Sequence
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from benchrunner.detection.models import Model, TestKind
from benchrunner.server.processing.evaluation import judge_report
from benchrunner.server.processing.judgment import JudgmentLater, judge_later
from benchrunner.server.processing.metric_parts import Owner, metrics_rest
from benchrunner.server.processing.pending_judgment import judge_awaiting
from benchrunner.server.processing.verdicts import (
    ALERT_ROWS,
    WRITE_ROWS,
    Stale,
    Verdicts,
    verdicts_write,
)
from benchrunner.server.store import alerts, pending_judgments, reports, thresholds
from benchrunner.server.store.engine import Database
from benchrunner.server.store.reports import MetricValue, StoredMetric
from benchrunner.server.store.tables import alert, boundary, measure, metric, threshold
from tests.new_reports import new_report_on
from tests.unit.stepped_series import T0, Series, stepped_series

TIGHT = Model(TestKind.PERCENTAGE, upper_boundary=0.1)
"""A step of 30 % crosses it."""
WIDE = Model(TestKind.PERCENTAGE, upper_boundary=10.0)
CHANGE = Model(TestKind.CHANGE_POINT)


def _series(
    engine: Engine, benchmarks: int, levels: Sequence[tuple[float, int]], model: Model
) -> Series:
    """``stepped_series`` with its threshold's alerts raised, not held back."""
    series = stepped_series(engine, benchmarks, levels, model, seed=7)
    with engine.begin() as conn:
        conn.execute(threshold.update().values(confirm=0))
    return series


def _judge(conn: Connection, report_id: int, metrics: list[StoredMetric]) -> Verdicts:
    found = thresholds.thresholds_of_report(conn, report_id, {m.measure_id for m in metrics})
    return judge_report(conn, report_id, metrics, found=found)


def _alerts(conn: Connection) -> list[Any]:
    return list(conn.execute(sa.select(alert.c.id, alert.c.report_id, alert.c.status)))


def _boundaries(conn: Connection, report_id: int) -> dict[int, Any]:
    return alerts.report_boundaries(conn, report_id)


def test_a_threshold_edited_between_read_and_write_writes_nothing(engine: Engine) -> None:
    series = _series(engine, 3, [(100.0, 20), (130.0, 1)], TIGHT)
    report_id, metrics = series.made[-1]
    with engine.connect() as conn:
        judged = _judge(conn, report_id, metrics)
    assert sum(len(u.alerts) for u in judged.units) == 3
    with engine.begin() as conn:  # the threshold edited before the write
        thresholds.threshold_put(conn, series.project_id, series.key, WIDE, T0)
    with pytest.raises(Stale), engine.begin() as conn:
        verdicts_write(conn, judged, judged.units, T0)
    with engine.connect() as conn:
        assert _boundaries(conn, report_id) == {}
        assert _alerts(conn) == []


def test_a_baseline_reset_between_read_and_write_writes_nothing(engine: Engine) -> None:
    series = _series(engine, 2, [(100.0, 20), (130.0, 1)], TIGHT)
    report_id, metrics = series.made[-1]
    with engine.connect() as conn:
        judged = _judge(conn, report_id, metrics)
    reset_from, _ = series.made[-2]
    with engine.begin() as conn:
        key = series.key
        at = T0 + dt.timedelta(hours=19)
        alerts.baseline_reset_add(
            conn, series.project_id, key.branch_id, key.testbed_id, None, reset_from, at, T0
        )
    with pytest.raises(Stale), engine.begin() as conn:
        verdicts_write(conn, judged, judged.units, T0)
    with engine.connect() as conn:
        assert _boundaries(conn, report_id) == {}


def test_a_judgment_that_finds_its_read_stale_is_judged_again_with_the_new_model(
    database_url: str, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The threshold is edited after ``judge_later``'s first read: its write finds the model
    changed, and the report is judged again from a new read, with the new model."""
    series = _series(engine, 3, [(100.0, 20), (130.0, 1)], TIGHT)
    report_id, metrics = series.made[-1]
    db = Database(database_url)
    read = db.read_apart
    edited: list[bool] = []

    async def edit_after_first_read(unit: Any, *args: Any) -> Any:
        planned = await read(unit, *args)
        if not edited:
            edited.append(True)
            with engine.begin() as conn:
                thresholds.threshold_put(conn, series.project_id, series.key, WIDE, T0)
        return planned

    db.read_apart = edit_after_first_read  # type: ignore[method-assign,assignment]
    try:
        later = JudgmentLater(report_id, tuple(metrics), noisy=False)
        judged = asyncio.run(judge_later(db, later, T0))
    finally:
        db.close()
    assert judged.written.raised == []
    with engine.connect() as conn:
        drawn = _boundaries(conn, report_id)
        assert sorted(drawn) == sorted(m.id for m in metrics)
        # drawn by the new model: upper limits at 11 times the mean, not 1.1 times
        assert all(b.upper_limit > 10 * b.baseline for b in drawn.values())
        assert _alerts(conn) == []


def test_the_same_report_judged_twice_raises_each_alert_once(engine: Engine) -> None:
    series = _series(engine, 3, [(100.0, 20), (130.0, 1)], TIGHT)
    report_id, metrics = series.made[-1]
    with engine.connect() as conn:  # two judgments read before either writes
        first = _judge(conn, report_id, metrics)
        second = _judge(conn, report_id, metrics)
    with engine.begin() as conn:
        assert len(verdicts_write(conn, first, first.units, T0).raised) == 3
    with engine.begin() as conn:
        assert verdicts_write(conn, second, second.units, T0).raised == []
    with engine.connect() as conn:
        assert len(_alerts(conn)) == 3


def test_a_step_alerted_by_another_report_meanwhile_gets_no_second_alert(
    engine: Engine,
) -> None:
    """Two reports at the new level judged (read) before either writes both find the step;
    the second write finds the first's alert on the step's points and raises none."""
    series = _series(engine, 1, [(100.0, 30), (130.0, 8)], CHANGE)
    (earlier, earlier_metrics), (latest, latest_metrics) = series.made[-2], series.made[-1]
    with engine.connect() as conn:
        first = _judge(conn, earlier, earlier_metrics)
        second = _judge(conn, latest, latest_metrics)
    [first_alert] = [a for u in first.units for a in u.alerts]
    [second_alert] = [a for u in second.units for a in u.alerts]
    assert first_alert.metric_id in second_alert.zone
    with engine.begin() as conn:
        assert len(verdicts_write(conn, first, first.units, T0).raised) == 1
    with engine.begin() as conn:
        assert verdicts_write(conn, second, second.units, T0).raised == []
        [(_, raised_by, status)] = _alerts(conn)
    assert (raised_by, status) == (earlier, "active")


def test_a_judgment_writes_at_most_write_rows_rows_a_transaction_on_sqlite(
    database_url: str, engine: Engine
) -> None:
    """Structural: the rows are counted, not timed. 250 metrics, some alerting: parts of at
    most ``WRITE_ROWS`` rows on SQLite, one on PostgreSQL (several writers at once: no single
    writer to hold); every metric judged."""
    series = _series(engine, 250, [(100.0, 10), (100.0, 1)], TIGHT)
    report_id, metrics = series.made[-1]
    with engine.begin() as conn:  # a tenth of the metrics 30 % up: they alert
        for m in metrics[::10]:
            conn.execute(
                metric.update().where(metric.c.id == m.id).values(value=metric.c.value * 1.3)
            )
    metrics = [
        dataclasses.replace(m, value=m.value * 1.3) if k % 10 == 0 else m
        for k, m in enumerate(metrics)
    ]
    db = Database(database_url)
    write = db.write
    rows: list[int] = []

    async def counted_write(unit: Any, *args: Any) -> Any:
        if unit is verdicts_write:
            rows.append(sum(u.rows for u in args[1]))
        return await write(unit, *args)

    db.write = counted_write  # type: ignore[method-assign,assignment]
    try:
        later = JudgmentLater(report_id, tuple(metrics), noisy=False)
        judged = asyncio.run(judge_later(db, later, T0))
    finally:
        db.close()
    assert len(judged.written.raised) == 25
    assert sum(rows) == 250 + 25 * ALERT_ROWS
    if engine.dialect.name == "sqlite":
        assert max(rows) <= WRITE_ROWS and len(rows) > 1
    else:
        assert len(rows) == 1
    with engine.connect() as conn:
        assert len(_boundaries(conn, report_id)) == 250


def test_a_threshold_edited_between_two_write_parts_judges_the_rest_with_the_new_model(
    database_url: str, engine: Engine
) -> None:
    """The threshold is edited after the judgment's first write part (SQLite): that part
    stands, drawn and alerted by the model it read; the next write finds the model changed,
    writes nothing, and the metrics left without a boundary are judged again from a new read
    with the new model. PostgreSQL writes one part: the edit comes after it."""
    series = _series(engine, 250, [(100.0, 10), (130.0, 1)], TIGHT)
    report_id, metrics = series.made[-1]
    db = Database(database_url)
    write = db.write
    parts: list[list[int]] = []

    async def edit_after_first_part(unit: Any, *args: Any) -> Any:
        done = await write(unit, *args)
        if unit is verdicts_write:
            parts.append([b.metric_id for u in args[1] for b in u.boundaries])
            if len(parts) == 1:
                with engine.begin() as conn:
                    thresholds.threshold_put(conn, series.project_id, series.key, WIDE, T0)
        return done

    db.write = edit_after_first_part  # type: ignore[method-assign,assignment]
    try:
        later = JudgmentLater(report_id, tuple(metrics), noisy=False)
        judged = asyncio.run(judge_later(db, later, T0))
    finally:
        db.close()
    first = set(parts[0])
    with engine.connect() as conn:
        drawn = _boundaries(conn, report_id)
        raised = _alerts(conn)
    assert sorted(drawn) == sorted(m.id for m in metrics)
    assert len(raised) == len(judged.written.raised) == len(first)
    for metric_id, drawn_boundary in drawn.items():
        tight = drawn_boundary.upper_limit < 2 * drawn_boundary.baseline
        assert tight == (metric_id in first)
    if engine.dialect.name == "sqlite":
        assert 0 < len(first) < len(metrics)
    else:
        assert len(parts) == 1 and len(first) == len(metrics)


def test_a_part_holding_a_metric_the_report_has_stores_only_the_others(engine: Engine) -> None:
    """A part stored again (after a stop) may name a (benchmark, measure, iteration) the
    report holds: that one is the stored metric, the others are inserted, each with its own
    alert flag."""
    series = _series(engine, 2, [(100.0, 1)], WIDE)
    report_id, stored = series.made[-1]
    again = MetricValue(0, "b0", "latency", 1.0, None, None)
    new = MetricValue(0, "b7", "latency", 2.0, None, None)
    with engine.begin() as conn:
        found = reports.metrics_add_missing(conn, report_id, series.project_id, [again, new], T0)
        count = conn.execute(
            sa.select(sa.func.count()).where(metric.c.report_id == report_id)
        ).scalar_one()
    assert found[0].id == stored[0].id
    assert found[0].value == stored[0].value and found[1].value == 2.0
    assert count == 3


@pytest.mark.parametrize("recovery", ["whole", "in parts"])
def test_results_whose_measure_slugs_find_one_measure_are_each_stored_and_judged(
    database_url: str, engine: Engine, recovery: str
) -> None:
    """A measure renamed (slug ``latency`` now ``lat``): a result naming ``lat`` finds it by
    slug, one naming ``latency`` by its name (``reports.measure_ids``), so both are results
    of one metric, each a metric of its own. A direct run's report of them, stored in two
    parts and stopped before its judgment, is judged by recovery (all its results as one
    rest, or its first part stored again and then the rest): each result is stored once and
    each metric judged with its own value (the second one's step alerts)."""
    series = _series(engine, 1, [(100.0, 20)], TIGHT)
    at = T0 + dt.timedelta(hours=20)
    part = [MetricValue(0, "b0", "lat", 100.0, None, None)]
    rest = [MetricValue(0, "b0", "latency", 130.0, None, None)]
    project_id = series.project_id
    with engine.begin() as conn:
        renamed = measure.update().where(measure.c.id == series.key.measure_id)
        conn.execute(renamed.values(slug="lat"))
        new = new_report_on(conn, project_id, "main", "box", "json", at)
        report_id, _ = reports.report_create(conn, new)
        pending_judgments.keep(conn, report_id, pending_judgments.encode(part + rest))
        stored = reports.metrics_add(conn, report_id, project_id, part, at)
    db = Database(database_url)
    try:
        asyncio.run(metrics_rest(db, Owner(report_id, project_id, None), rest, at, stored))
        if recovery == "whole":
            judged = asyncio.run(judge_awaiting(db, report_id, at))
        else:
            with engine.begin() as conn:
                again = reports.metrics_add_missing(conn, report_id, project_id, part, at)
            later = JudgmentLater(
                report_id, tuple(again), noisy=False, rest=tuple(rest), project_id=project_id
            )
            judged = asyncio.run(judge_later(db, later, at))
    finally:
        db.close()
    with engine.connect() as conn:
        held = conn.execute(
            sa.select(metric.c.id, metric.c.measure_id, metric.c.value)
            .where(metric.c.report_id == report_id)
            .order_by(metric.c.id)
        ).all()
        drawn = _boundaries(conn, report_id)
        alerted = conn.execute(
            sa.select(boundary.c.metric_id)
            .join(alert, alert.c.boundary_id == boundary.c.id)
            .where(alert.c.report_id == report_id)
        ).scalars()
        alerted_metrics = list(alerted)
    assert judged is not None and judged.ended
    assert {row.measure_id for row in held} == {series.key.measure_id}
    assert [row.value for row in held] == [100.0, 130.0]
    assert sorted(drawn) == [row.id for row in held]
    assert alerted_metrics == [held[1].id]
