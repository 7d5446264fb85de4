"""The look-back reads and judges outside any write transaction, then writes what it found in
short write transactions (docs/how-to/thresholds-alerts.md#change-points-that-look-back), on
both engines: each writes at most ``WRITE_ROWS`` alerts, and what changed between the read and
the write is re-checked there, so a threshold changed meanwhile raises nothing with its old
model, and a step another report's look-back alerted meanwhile gets no second alert."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from benchrunner.detection.look_back import Raise, Reopen
from benchrunner.detection.models import Model, TestKind
from benchrunner.server.processing import look_back
from benchrunner.server.processing.look_back import (
    WRITE_ROWS,
    LookBackLater,
    Planned,
    look_back_plan,
    look_back_write,
)
from benchrunner.server.store import thresholds
from benchrunner.server.store.engine import Database, make_engine
from benchrunner.server.store.reports import StoredMetric
from benchrunner.server.store.tables import alert
from tests.databases import with_schema
from tests.unit.stepped_series import T0, stepped_series

WIDE = Model(TestKind.PERCENTAGE, upper_boundary=10.0)
"""A limit far above any value: only the look-back alerts."""


def _series(
    engine: Engine, benchmarks: int, levels: Sequence[tuple[float, int]]
) -> tuple[int, thresholds.SeriesKey, list[tuple[int, list[StoredMetric]]]]:
    """``stepped_series`` under ``WIDE``: its project's id, its threshold's series, and each
    report with its metrics."""
    series = stepped_series(engine, benchmarks, levels, WIDE, seed=5)
    return series.project_id, series.key, series.made


def _thresholds(conn: Connection, report_id: int, metrics: list[StoredMetric]) -> list[Any]:
    """The thresholds the report's evaluation would judge with."""
    return thresholds.thresholds_of_report(conn, report_id, {m.measure_id for m in metrics})


def _plan(conn: Connection, report_id: int, metrics: list[StoredMetric]) -> list[Planned]:
    """``look_back_plan`` with the thresholds the report's evaluation would judge with."""
    return look_back_plan(conn, report_id, metrics, found=_thresholds(conn, report_id, metrics))


def _alerts(conn: Connection) -> list[Any]:
    return list(conn.execute(sa.select(alert.c.id, alert.c.report_id, alert.c.status)))


def test_a_threshold_changed_between_read_and_write_raises_nothing(database_url: str) -> None:
    with_schema(database_url)
    engine = make_engine(database_url, writer=True)
    try:
        project, key, made = _series(engine, 1, [(100.0, 30), (130.0, 8)])
        report_id, metrics = made[-1]
        with engine.connect() as conn:
            planned = _plan(conn, report_id, metrics)
        assert [type(p.action) for p in planned] == [Raise]
        with engine.begin() as conn:  # a new model for the threshold, before the write
            changed = Model(TestKind.PERCENTAGE, upper_boundary=5.0)
            thresholds.threshold_put(conn, project, key, changed, T0)
        with engine.begin() as conn:
            assert look_back_write(conn, report_id, planned, T0) == 0
            assert _alerts(conn) == []
        with engine.connect() as conn:  # judged again, with the new model, it raises
            again = _plan(conn, report_id, metrics)
        with engine.begin() as conn:
            assert look_back_write(conn, report_id, again, T0) == 1
    finally:
        engine.dispose()


def test_a_step_alerted_by_another_report_meanwhile_gets_no_second_alert(
    database_url: str,
) -> None:
    with_schema(database_url)
    engine = make_engine(database_url, writer=True)
    try:
        _, _, made = _series(engine, 1, [(100.0, 30), (130.0, 8)])
        (earlier, earlier_metrics), (latest, latest_metrics) = made[-2], made[-1]
        with engine.connect() as conn:  # both look-backs read before either writes
            first = _plan(conn, earlier, earlier_metrics)
            second = _plan(conn, latest, latest_metrics)
        assert len(first) == len(second) == 1
        # the same step, seen from two reports: the other's alert would stand on its zone
        assert first[0].where in second[0].zone
        with engine.begin() as conn:
            assert look_back_write(conn, earlier, first, T0) == 1
        with engine.begin() as conn:
            assert look_back_write(conn, latest, second, T0) == 0
            [(_, raised_by, status)] = _alerts(conn)
        assert (raised_by, status) == (earlier, "active")
    finally:
        engine.dispose()


def test_a_look_back_writes_at_most_write_rows_alerts_a_transaction(database_url: str) -> None:
    """Structural: the writes are counted, not timed. 45 series with a step each: write
    transactions of ``WRITE_ROWS`` alerts and one of the rest, the reads and the detector in one
    read unit off the event loop."""
    with_schema(database_url)
    engine = make_engine(database_url, writer=True)
    try:
        _, _, made = _series(engine, 45, [(100.0, 30), (130.0, 8)])
    finally:
        engine.dispose()
    report_id, metrics = made[-1]
    db = Database(database_url)
    written: list[int] = []
    reads: list[str] = []
    write, read = db.write, db.read_apart

    async def counted_write(unit: Any, *args: Any) -> Any:
        assert unit is look_back_write
        planned: list[Planned] = args[1]
        written.append(len(planned))
        return await write(unit, *args)

    async def counted_read(unit: Any, *args: Any) -> Any:
        reads.append(getattr(unit, "__name__", ""))
        return await read(unit, *args)

    db.write = counted_write  # type: ignore[method-assign,assignment]
    db.read_apart = counted_read  # type: ignore[method-assign,assignment]
    try:
        later = LookBackLater(report_id, tuple(metrics), noisy=False, found=[])
        with db.read_engine.connect() as conn:
            later = dataclasses.replace(later, found=_thresholds(conn, report_id, metrics))
        raised = asyncio.run(look_back.look_back_later(db, later, T0))
    finally:
        db.close()
    assert raised == 45
    full, rest = divmod(45, WRITE_ROWS)
    assert written == [WRITE_ROWS] * full + ([rest] if rest else [])
    assert reads == ["plan"]


def test_an_alert_triaged_expected_between_read_and_write_is_not_reopened(
    database_url: str,
) -> None:
    with_schema(database_url)
    engine = make_engine(database_url, writer=True)
    try:
        _, _, made = _series(engine, 1, [(100.0, 30), (130.0, 12)])
        report_id, metrics = made[-1]
        with engine.connect() as conn:
            [step] = _plan(conn, report_id, metrics)
        with engine.begin() as conn:
            assert look_back_write(conn, report_id, [step], T0) == 1
            # dismissed before the newest 6 reports were stored: they persist at the level
            dismissed_at = T0 + dt.timedelta(hours=35)
            conn.execute(alert.update().values(status="dismissed", modified=dismissed_at))
        with engine.connect() as conn:
            [reopen] = _plan(conn, report_id, metrics)
        assert isinstance(reopen.action, Reopen)
        with engine.begin() as conn:  # triaged expected before the write: it stays dismissed
            conn.execute(alert.update().values(verdict="expected"))
        with engine.begin() as conn:
            assert look_back_write(conn, report_id, [reopen], T0) == 0
            conn.execute(alert.update().values(verdict=None))
        with engine.begin() as conn:  # the same write, untriaged, re-opens it
            assert look_back_write(conn, report_id, [reopen], T0) == 1
            [(_, _, status)] = _alerts(conn)
        assert status == "active"
    finally:
        engine.dispose()
