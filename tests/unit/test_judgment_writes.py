"""A report's judgment is read and computed outside any write transaction, then written in
short write transactions (docs/decisions/processing.md), on both engines: each writes at most
its budget of rows, counted as the database sees them (not timed); the last clears the report's
mark; and a history that changed between the read and a write is read and judged again."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from benchrunner.core.tiers import Plan
from benchrunner.detection.models import Model, TestKind
from benchrunner.server.processing.judgment import (
    ATTEMPTS,
    NOT_STORED,
    Judging,
    JudgmentDue,
    Storing,
    judge_and_look_back,
    judge_apart,
    judge_here,
    judge_left_over,
    judgment_plan,
    judgment_write,
    store_part,
    stores_in_parts,
)
from benchrunner.server.processing.verdicts import ALERT_ROWS
from benchrunner.server.store import accounts, alerts, judgings, reports, thresholds
from benchrunner.server.store.alerts import NewBoundary
from benchrunner.server.store.engine import Database, make_engine
from benchrunner.server.store.reports import MetricValue
from benchrunner.server.store.tables import alert, benchmark, boundary, metric, report
from tests.databases import with_schema

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
TEN_PERCENT = Model(TestKind.PERCENTAGE, upper_boundary=0.1)
CHANGES = Model(TestKind.CHANGE_POINT)


@dataclasses.dataclass
class Series:
    project_id: int
    new: reports.NewReport
    hours: int = 0


def _history(
    engine: Engine, benchmarks: int, runs: int, model: Model = TEN_PERCENT, then: float = 100
) -> Series:
    """A project whose ``benchmarks`` benchmarks on main ran ``runs`` times at 100 (1 % noise;
    the last half at ``then``), an hour apart, under a 10 % threshold (``model``) on latency."""
    rng = np.random.default_rng(3)
    with engine.begin() as conn:
        leader = accounts.user_get_or_create(conn, "l@x", "l", admin=False, now=T0).id
        org = accounts.organization_create(conn, "org", Plan.TEAM, T0, leader_id=leader)
        project = accounts.project_create(conn, org.id, "p", "public", T0).id
        series = Series(project, reports.new_report_on(conn, project, "main", "box", "json", T0))
        for run in range(runs):
            level = 100 if run < runs // 2 else then
            _report(conn, series, [level * float(rng.normal(1, 0.01)) for _ in range(benchmarks)])
        key = thresholds.SeriesKey(
            series.new.branch_id, series.new.testbed_id, _latency(conn, project), None
        )
        thresholds.threshold_put(conn, project, key, model, T0)
    return series


def _latency(conn: Connection, project_id: int) -> int:
    return reports.measure_ids(conn, project_id, ["latency"], T0)["latency"]


def _report(
    conn: Connection, series: Series, values: list[float], *, hour: int | None = None
) -> int:
    """A report of ``values`` (benchmark ``b{k}``'s at ``k``) the next hour (or at ``hour``)."""
    if hour is None:
        hour = series.hours
        series.hours += 1
    at = T0 + dt.timedelta(hours=hour)
    timed = dataclasses.replace(series.new, start_time=at, end_time=at, now=at)
    report_id, _ = reports.report_create(conn, timed)
    new = [MetricValue(0, f"b{k}", "latency", v, None, None) for k, v in enumerate(values)]
    reports.metrics_add(conn, report_id, series.project_id, new, at)
    return report_id


def _judged_report(engine: Engine, series: Series, values: list[float]) -> Judging:
    """A new report of ``values``, stored and marked as being judged, as processing leaves it."""
    with engine.begin() as conn:
        report_id = _report(conn, series, values)
        judging = Judging(report_id)
        assert judgings.judging_start(conn, report_id, judging.encoded())
    return judging


def _of_report(conn: Connection, table: sa.Table, report_id: int) -> int:
    joined = boundary.join(metric, metric.c.id == boundary.c.metric_id)
    if table is alert:
        joined = joined.join(alert, alert.c.boundary_id == boundary.c.id)
    return int(
        conn.execute(
            sa.select(sa.func.count()).select_from(joined).where(metric.c.report_id == report_id)
        ).scalar_one()
    )


class RowsPerWrite:
    """The boundary and alert rows each write transaction of ``engine`` inserted, as the
    database was asked for them."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.writes: list[tuple[int, int]] = []
        self._boundaries = 0
        self._alerts = 0

    def _executed(self, _conn: Any, element: Any, multiparams: Any, params: Any, *_: Any) -> None:
        table = getattr(element, "table", None)
        if not isinstance(element, sa.Insert) or table is None:
            return
        rows = len(multiparams) if multiparams else 1
        if table.name == "boundary":
            self._boundaries += rows
        elif table.name == "alert":
            self._alerts += rows

    def _committed(self, _conn: Any) -> None:
        self.writes.append((self._boundaries, self._alerts))
        self._boundaries = self._alerts = 0

    def __enter__(self) -> RowsPerWrite:
        sa.event.listen(self.engine, "after_execute", self._executed)
        sa.event.listen(self.engine, "commit", self._committed)
        return self

    def __exit__(self, *_: object) -> None:
        sa.event.remove(self.engine, "after_execute", self._executed)
        sa.event.remove(self.engine, "commit", self._committed)


def _reads_noted(db: Database, then: Callable[[], None] = lambda: None) -> list[str]:
    """The units ``db.read_apart`` runs, by name; ``then`` runs after the first."""
    names: list[str] = []
    read = db.read_apart

    async def noted(unit: Any, *args: Any) -> Any:
        result = await read(unit, *args)
        names.append(getattr(unit, "__name__", ""))
        if len(names) == 1:
            then()
        return result

    db.read_apart = noted  # type: ignore[method-assign,assignment]
    return names


def test_a_judgment_writes_at_most_its_rows_a_transaction(database_url: str) -> None:
    """120 metrics, 30 of them regressed: their boundaries and alerts in write transactions of
    at most 20 rows (an alert counts ``ALERT_ROWS``), after one read unit."""
    with_schema(database_url)
    engine = make_engine(database_url, writer=True)
    try:
        series = _history(engine, 120, 8)
        values = [(130.0 if k % 4 == 0 else 100.0) for k in range(120)]
        judging = _judged_report(engine, series, values)
    finally:
        engine.dispose()
    db = Database(database_url)
    reads = _reads_noted(db)
    try:
        with RowsPerWrite(db.write_engine) as counted:
            judged = asyncio.run(judge_apart(db, JudgmentDue(judging), lambda: T0, rows=20))
        with db.read_engine.connect() as conn:
            drawn = _of_report(conn, boundary, judging.report_id)
            raised = _of_report(conn, alert, judging.report_id)
            left = judgings.judging_of(conn, judging.report_id)
    finally:
        db.close()
    assert reads == ["judgment_plan"]
    assert (drawn, raised, judged.raised, left) == (120, 30, 30, None)
    assert len(counted.writes) >= (120 + 30 * ALERT_ROWS) // 20
    assert all(b + a * ALERT_ROWS <= 20 for b, a in counted.writes), counted.writes
    assert sum(b for b, _ in counted.writes) == 120 and sum(a for _, a in counted.writes) == 30


def test_a_history_changed_between_read_and_write_is_judged_again(database_url: str) -> None:
    """A report of the history stored after the judgment read it (a late runner job of an
    earlier start) changes the limits: the write finds it, and the judgment reads again."""
    with_schema(database_url)
    engine = make_engine(database_url, writer=True)
    try:
        series = _history(engine, 3, 8)
        judging = _judged_report(engine, series, [105.0, 105.0, 105.0])

        def late_report() -> None:
            with engine.begin() as conn:
                _report(conn, series, [1000.0, 1000.0, 1000.0], hour=2)

        db = Database(database_url)
        reads = _reads_noted(db, late_report)
        try:
            asyncio.run(judge_apart(db, JudgmentDue(judging), lambda: T0))
            with db.read_engine.connect() as conn:
                again = judgment_plan(conn, judging, None)
                baselines = conn.execute(
                    sa.select(boundary.c.baseline)
                    .join(metric, metric.c.id == boundary.c.metric_id)
                    .where(metric.c.report_id == judging.report_id)
                ).scalars()
                drawn = sorted(float(b) for b in baselines)
        finally:
            db.close()
    finally:
        engine.dispose()
    assert reads == ["judgment_plan", "judgment_plan"]
    expected = sorted(
        float(b.baseline)
        for b in again.verdicts.items
        if isinstance(b, NewBoundary) and b.baseline is not None
    )
    assert drawn == expected and all(b > 150 for b in drawn)  # the late 1,000s count


def _refused(conn: Connection, table: str) -> None:
    """Every insert into ``table`` fails from now on, as a write of a bug or a broken disk
    would: a trigger of the database's own."""
    if conn.dialect.name == "sqlite":
        conn.execute(
            sa.text(
                f"CREATE TRIGGER refused BEFORE INSERT ON {table} "
                "BEGIN SELECT RAISE(ABORT, 'refused'); END"
            )
        )
        return
    conn.execute(
        sa.text(
            "CREATE FUNCTION refused() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN RAISE EXCEPTION 'refused'; END $$"
        )
    )
    conn.execute(
        sa.text(
            f"CREATE TRIGGER refused BEFORE INSERT ON {table} "
            "FOR EACH ROW EXECUTE FUNCTION refused()"
        )
    )


def _report_state(db: Database, report_id: int) -> tuple[str | None, str | None]:
    with db.read_engine.connect() as conn:
        row = conn.execute(
            sa.select(report.c.judging, report.c.error).where(report.c.id == report_id)
        ).one()
    return row.judging, row.error


def test_a_judgment_whose_write_keeps_failing_is_given_up_with_its_error(
    database_url: str,
) -> None:
    """A write that fails whatever the attempt (here every boundary refused) is counted on
    the report's mark; at the last attempt the report keeps the error, unjudged, and is
    judged no more."""
    with_schema(database_url)
    engine = make_engine(database_url, writer=True)
    try:
        series = _history(engine, 3, 8)
        judging = _judged_report(engine, series, [130.0, 100.0, 100.0])
        with engine.begin() as conn:
            _refused(conn, "boundary")
    finally:
        engine.dispose()
    db = Database(database_url)
    states = []
    try:
        for _ in range(ATTEMPTS):
            judged = asyncio.run(judge_and_look_back(db, JudgmentDue(judging), lambda: T0))
            assert judged is None
            states.append(_report_state(db, judging.report_id))
    finally:
        db.close()
    for attempt, (left, error) in enumerate(states[:-1], 1):
        assert left is not None and Judging.decoded(0, left).attempts == attempt
        assert error is None
    left, error = states[-1]
    assert left is None, "still to judge after the last attempt"
    assert error is not None and error.startswith(f"not judged after {ATTEMPTS} attempts")
    assert "refused" in error


def test_a_report_judged_at_once_keeps_its_metrics_when_its_judgment_fails(
    database_url: str,
) -> None:
    """``judge_here`` writes in a savepoint: a write that fails leaves the caller's
    transaction, and the metrics it stored, standing."""
    with_schema(database_url)
    engine = make_engine(database_url, writer=True)
    try:
        series = _history(engine, 3, 8)
        with engine.begin() as conn:
            _refused(conn, "boundary")
        with engine.begin() as conn:
            report_id = _report(conn, series, [130.0, 100.0, 100.0])
            judge_here(conn, JudgmentDue(Judging(report_id)), T0)
        with engine.connect() as conn:
            stored = conn.execute(
                sa.select(sa.func.count()).where(metric.c.report_id == report_id)
            ).scalar_one()
            drawn = _of_report(conn, boundary, report_id)
    finally:
        engine.dispose()
    assert (stored, drawn) == (3, 0)


def test_a_direct_run_judged_again_at_startup_looks_back(database_url: str) -> None:
    """The step of a series whose reports were stored unjudged (4 runs at 100, 4 at 130) is
    found by the look-back of the report a crash left marked, judged again at startup: its
    alert lies on an earlier report's metric."""
    with_schema(database_url)
    engine = make_engine(database_url, writer=True)
    try:
        series = _history(engine, 1, 8, model=CHANGES, then=130)
        judging = _judged_report(engine, series, [130.0])
    finally:
        engine.dispose()
    db = Database(database_url)
    try:
        assert asyncio.run(judge_left_over(db, lambda: T0)) == 1
        with db.read_engine.connect() as conn:
            on_earlier = conn.execute(
                sa.select(sa.func.count())
                .select_from(alert.join(boundary).join(metric))
                .where(metric.c.report_id != judging.report_id)
            ).scalar_one()
            left = judgings.judging_of(conn, judging.report_id)
    finally:
        db.close()
    assert left is None
    assert on_earlier == 1, "the look-back did not run"


def test_a_step_alerted_since_the_read_is_not_alerted_twice(database_url: str) -> None:
    """A step's alert raised by another report on a neighbouring point of the step after the
    judgment read the series: the write sees it, the judgment reads again, and the step keeps
    one alert."""
    with_schema(database_url)
    engine = make_engine(database_url, writer=True)
    try:
        series = _history(engine, 1, 8, model=CHANGES, then=130)
        judging = _judged_report(engine, series, [130.0])
        with engine.connect() as conn:
            plan = judgment_plan(conn, judging, None)
        [step] = [i for i in plan.verdicts.items if not isinstance(i, NewBoundary)]
        neighbour = step.zone[step.zone.index(step.metric_id) + 1]

        def alerted_elsewhere() -> None:
            with engine.begin() as conn:
                t = plan.found[0]
                [boundary_id] = alerts.boundaries_put(
                    conn, [NewBoundary(neighbour, t.threshold_id, t.id, 100.0, None, None, None)]
                )
                change = alerts.Change(100.0, 130.0, 0.3, 1e-9)
                alerts.alert_raise(conn, boundary_id, judging.report_id - 1, "upper", T0, change)

        db = Database(database_url)
        reads = _reads_noted(db, alerted_elsewhere)
        try:
            asyncio.run(judge_apart(db, JudgmentDue(judging), lambda: T0))
            with db.read_engine.connect() as conn:
                alerted = alerts.change_alerted(conn, list(step.zone))
        finally:
            db.close()
    finally:
        engine.dispose()
    assert reads == ["judgment_plan", "judgment_plan"]
    assert alerted == {neighbour}


def test_a_threshold_created_since_the_read_judges_the_report(database_url: str) -> None:
    """A benchmark's own threshold created after the judgment read its series: the write
    sees it, and the benchmark's metric is judged by it."""
    with_schema(database_url)
    engine = make_engine(database_url, writer=True)
    try:
        series = _history(engine, 3, 8)
        judging = _judged_report(engine, series, [100.0, 100.0, 100.0])
        override: list[int] = []

        def threshold_created() -> None:
            with engine.begin() as conn:
                b0 = reports.named_ids(conn, benchmark, series.project_id, ["b0"], T0)["b0"]
                key = thresholds.SeriesKey(
                    series.new.branch_id,
                    series.new.testbed_id,
                    _latency(conn, series.project_id),
                    b0,
                )
                override.append(
                    thresholds.threshold_put(conn, series.project_id, key, CHANGES, T0)[0]
                )

        db = Database(database_url)
        reads = _reads_noted(db, threshold_created)
        try:
            asyncio.run(judge_apart(db, JudgmentDue(judging), lambda: T0))
            with db.read_engine.connect() as conn:
                judged_by = set(
                    conn.execute(
                        sa.select(boundary.c.threshold_id)
                        .join(metric, metric.c.id == boundary.c.metric_id)
                        .where(metric.c.report_id == judging.report_id)
                    ).scalars()
                )
        finally:
            db.close()
    finally:
        engine.dispose()
    assert reads == ["judgment_plan", "judgment_plan"]
    assert override[0] in judged_by and len(judged_by) == 2


def _parts_noted(db: Database) -> list[int]:
    """The metrics of each ``store_part`` write unit ``db`` runs."""
    parts: list[int] = []
    write = db.write

    async def noted(unit: Any, *args: Any) -> Any:
        if unit is store_part:
            parts.append(len(args[1].values[args[2]]))
        return await write(unit, *args)

    db.write = noted  # type: ignore[method-assign,assignment]
    return parts


def _to_store(engine: Engine, series: Series, values: list[float]) -> JudgmentDue:
    """A new report of ``values`` marked as being stored in parts, its metrics not stored
    yet, as processing leaves it on SQLite."""
    at = T0 + dt.timedelta(hours=series.hours)
    series.hours += 1
    new = [MetricValue(0, f"b{k}", "latency", v, None, None) for k, v in enumerate(values)]
    with engine.begin() as conn:
        timed = dataclasses.replace(series.new, start_time=at, end_time=at, now=at)
        report_id, _ = reports.report_create(conn, timed)
        judging = Judging(report_id)
        assert judgings.judging_start(conn, report_id, judging.storing())
    return JudgmentDue(judging, storing=Storing(series.project_id, new, at))


def _metrics_of(conn: Connection, report_id: int) -> int:
    found = sa.select(sa.func.count()).where(metric.c.report_id == report_id)
    return int(conn.execute(found).scalar_one())


def test_metrics_stored_in_parts_are_no_history_until_the_last(database_url: str) -> None:
    """On SQLite a report's metrics are stored ``rows`` a write transaction; until the last,
    a later report's judgment reads its series without them."""
    with_schema(database_url)
    engine = make_engine(database_url, writer=True)
    try:
        with engine.connect() as conn:
            if not stores_in_parts(conn):
                return  # PostgreSQL stores them with the mark, in one transaction
        series = _history(engine, 40, 8)
        due = _to_store(engine, series, [1000.0] * 40)
        storing = due.storing
        assert storing is not None
        with engine.begin() as conn:
            store_part(conn, due.judging.report_id, storing, slice(0, 10), None)
        later = _judged_report(engine, series, [100.0] * 40)
        with engine.connect() as conn:
            half = _metrics_of(conn, due.judging.report_id)
            without = judgment_plan(conn, later, None)
        db = Database(database_url)
        try:
            parts = _parts_noted(db)
            rest = dataclasses.replace(storing, values=storing.values[10:])
            rest_due = dataclasses.replace(due, storing=rest)
            asyncio.run(judge_apart(db, rest_due, lambda: T0, rows=10))
            with db.read_engine.connect() as conn:
                stored = _metrics_of(conn, due.judging.report_id)
                with_it = judgment_plan(conn, later, None)
        finally:
            db.close()
    finally:
        engine.dispose()
    assert half == 10 and stored == 40
    assert parts == [10, 10, 10]

    def baselines(plan: Any) -> list[float]:
        return [
            b.baseline
            for b in plan.verdicts.items
            if isinstance(b, NewBoundary) and b.baseline is not None
        ]

    assert all(b < 110 for b in baselines(without)), "a half stored report was read"
    assert all(b > 110 for b in baselines(with_it))


def test_a_direct_run_stopped_as_its_metrics_were_stored_keeps_an_error(
    database_url: str,
) -> None:
    """A server killed between two parts of a direct run's metrics: at startup the part
    stored is deleted (the rest went with the request) and the report keeps the error."""
    with_schema(database_url)
    engine = make_engine(database_url, writer=True)
    try:
        series = _history(engine, 20, 4)
        due = _to_store(engine, series, [100.0] * 20)
        storing = due.storing
        assert storing is not None
        with engine.begin() as conn:
            store_part(conn, due.judging.report_id, storing, slice(0, 5), None)
    finally:
        engine.dispose()
    db = Database(database_url)
    try:
        assert asyncio.run(judge_left_over(db, lambda: T0)) == 1
        with db.read_engine.connect() as conn:
            left = _metrics_of(conn, due.judging.report_id)
        state = _report_state(db, due.judging.report_id)
    finally:
        db.close()
    assert left == 0
    assert state == (None, NOT_STORED)


def test_a_history_committed_after_the_read_with_older_ids_is_judged_again(
    database_url: str,
) -> None:
    """PostgreSQL: a late report whose metrics took their ids before the judgment read, and
    committed after it, while newer ids (another project's) committed before: the write sees
    its series' history version moved, and the judgment reads again. (SQLite's one writer
    commits in id order.)"""
    with_schema(database_url)
    engine = make_engine(database_url, writer=True)
    try:
        if engine.dialect.name == "sqlite":
            pytest.skip("one writer: ids are in commit order")
        series = _history(engine, 3, 8)
        judging = _judged_report(engine, series, [105.0, 105.0, 105.0])
        other = _history(engine, 3, 1)
        late = engine.connect()
        late.begin()
        _report(late, series, [1000.0, 1000.0, 1000.0], hour=2)  # older ids, not committed
        with engine.begin() as conn:
            _report(conn, other, [100.0, 100.0, 100.0])  # newer ids, committed

        db = Database(database_url)
        reads = _reads_noted(db, late.commit)
        try:
            asyncio.run(judge_apart(db, JudgmentDue(judging), lambda: T0))
            with db.read_engine.connect() as conn:
                baselines = conn.execute(
                    sa.select(boundary.c.baseline)
                    .join(metric, metric.c.id == boundary.c.metric_id)
                    .where(metric.c.report_id == judging.report_id)
                ).scalars()
                drawn = [float(b) for b in baselines]
        finally:
            db.close()
            late.close()
    finally:
        engine.dispose()
    assert reads == ["judgment_plan", "judgment_plan"]
    assert len(drawn) == 3 and all(b > 150 for b in drawn)  # the late 1,000s count


def test_the_last_reading_written_unchecked_raises_no_second_step_alert(
    database_url: str,
) -> None:
    """The reading written without the check (after ``REREADS``) leaves out a step's alert on
    whose points another appeared since: the rest of it is written."""
    with_schema(database_url)
    engine = make_engine(database_url, writer=True)
    try:
        series = _history(engine, 1, 8, model=CHANGES, then=130)
        judging = _judged_report(engine, series, [130.0])
        with engine.connect() as conn:
            plan = judgment_plan(conn, judging, None)
        [step] = [i for i in plan.verdicts.items if not isinstance(i, NewBoundary)]
        neighbour = step.zone[step.zone.index(step.metric_id) + 1]
        with engine.begin() as conn:
            t = plan.found[0]
            [boundary_id] = alerts.boundaries_put(
                conn, [NewBoundary(neighbour, t.threshold_id, t.id, 100.0, None, None, None)]
            )
            change = alerts.Change(100.0, 130.0, 0.3, 1e-9)
            alerts.alert_raise(conn, boundary_id, judging.report_id - 1, "upper", T0, change)
        with engine.begin() as conn:
            items = plan.verdicts.items
            written = judgment_write(conn, plan, items, T0, JudgmentDue(judging), False)
            alerted = alerts.change_alerted(conn, list(step.zone))
            drawn = _of_report(conn, boundary, judging.report_id)
            left = judgings.judging_of(conn, judging.report_id)
    finally:
        engine.dispose()
    assert written is not None and written.raised == 0
    assert alerted == {neighbour} and drawn == 1 and left is None
