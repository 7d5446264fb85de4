"""A report's judgment under way (docs/decisions/processing.md): its metrics are stored, its
boundaries and alerts are being written in short transactions. ``report.judging`` holds what
judging it again needs (JSON, ``processing.judgment.Judging``) from the transaction that stored
the metrics to the judgment's last write, which clears it; a report a crash left with it set is
judged again (a runner job's by the processor, as its job is still ``completed``; a direct
run's at startup)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.core.states import JobStatus
from benchrunner.server.store.history import Scope
from benchrunner.server.store.reports import StoredMetric
from benchrunner.server.store.tables import baseline_reset, job, metric, report

_UNPROCESSED = sa.or_(
    ~sa.exists().where(job.c.report_id == report.c.id),
    sa.exists().where(job.c.report_id == report.c.id, job.c.status == int(JobStatus.COMPLETED)),
)

_START = (
    report.update()
    .where(report.c.id == sa.bindparam("report_id"), report.c.judging.is_(None), _UNPROCESSED)
    .values(judging=sa.bindparam("judging"))
    .returning(report.c.id)
)


def judging_start(conn: Connection, report_id: int, judging: str) -> bool:
    """Mark the report's judgment under way (``judging``: what judging it again needs); False,
    with nothing written, when it is under way already (its metrics are stored: an earlier
    attempt's) or its job is no longer ``completed``."""
    return conn.execute(_START, {"report_id": report_id, "judging": judging}).first() is not None


def judging_end(conn: Connection, report_id: int) -> None:
    """The report's judgment is written: nothing is left to judge again."""
    conn.execute(report.update().where(report.c.id == report_id).values(judging=None))


def judging_of(conn: Connection, report_id: int) -> str | None:
    """What judging the report again needs, while its judgment is under way; else None."""
    found = conn.execute(sa.select(report.c.judging).where(report.c.id == report_id)).scalar()
    return None if found is None else str(found)


_DIRECT_UNDER_WAY = sa.select(report.c.id).where(
    report.c.judging.is_not(None), ~sa.exists().where(job.c.report_id == report.c.id)
)


def direct_judgings(conn: Connection) -> list[int]:
    """The reports of direct runs (no job) whose judgment is under way: at startup, those a
    crash interrupted."""
    return [int(i) for i in conn.execute(_DIRECT_UNDER_WAY.order_by(report.c.id)).scalars()]


_METRICS_OF = (
    sa.select(metric.c.id, metric.c.benchmark_id, metric.c.measure_id, metric.c.value)
    .where(metric.c.report_id == sa.bindparam("report_id"))
    .order_by(metric.c.id)
)


def stored_metrics(
    conn: Connection, report_id: int, never_alerts: Sequence[int]
) -> list[StoredMetric]:
    """The report's metrics in the order they were stored; ``never_alerts``: the positions, in
    that order, of those that never alert."""
    quiet = set(never_alerts)
    rows = conn.execute(_METRICS_OF, {"report_id": report_id})
    return [
        StoredMetric(row.id, row.benchmark_id, row.measure_id, row.value, index in quiet)
        for index, row in enumerate(rows)
    ]


@dataclass(frozen=True)
class HistoryMark:
    """How far the metrics and baseline resets went when a judgment read its history."""

    metric_id: int
    reset_id: int


_MARK = sa.select(
    sa.select(sa.func.coalesce(sa.func.max(metric.c.id), 0)).scalar_subquery(),
    sa.select(sa.func.coalesce(sa.func.max(baseline_reset.c.id), 0)).scalar_subquery(),
)


def history_mark(conn: Connection) -> HistoryMark:
    """The newest metric and baseline reset now (two lookups of a primary key's end)."""
    metric_id, reset_id = conn.execute(_MARK).one()
    return HistoryMark(int(metric_id), int(reset_id))


_NEW_HISTORY = (
    sa.select(metric.c.id)
    .join(report, report.c.id == metric.c.report_id)
    .where(
        metric.c.id > sa.bindparam("metric_id"),
        metric.c.measure_id.in_(sa.bindparam("measure_ids", expanding=True)),
        report.c.branch_id.in_(sa.bindparam("branch_ids", expanding=True)),
        report.c.testbed_id == sa.bindparam("testbed_id"),
        report.c.start_time < sa.bindparam("until"),
        report.c.id != sa.bindparam("report_id"),
    )
    .limit(1)
)
_NEW_RESET = (
    sa.select(baseline_reset.c.id)
    .where(
        baseline_reset.c.id > sa.bindparam("reset_id"),
        baseline_reset.c.branch_id == sa.bindparam("branch_id"),
        baseline_reset.c.testbed_id == sa.bindparam("testbed_id"),
    )
    .limit(1)
)


def history_moved(
    conn: Connection, scope: Scope, measure_ids: Sequence[int], mark: HistoryMark
) -> bool:
    """Whether a metric that may belong to the history of ``scope`` (of these measures: the
    report's own excepted) or a baseline reset of its series was stored after ``mark``: the
    judgment that read that history must read it again. Cheap when nothing was stored since
    (``history_mark``); otherwise one bounded look at what was."""
    now = history_mark(conn)
    if (
        now.reset_id > mark.reset_id
        and conn.execute(
            _NEW_RESET,
            {
                "reset_id": mark.reset_id,
                "branch_id": scope.branch_id,
                "testbed_id": scope.testbed_id,
            },
        ).first()
    ):
        return True
    if now.metric_id <= mark.metric_id:
        return False
    branch_ids = [scope.branch_id]
    if scope.start_point_branch_id is not None:
        branch_ids.append(scope.start_point_branch_id)
    params = {
        "metric_id": mark.metric_id,
        "measure_ids": sorted(set(measure_ids)),
        "branch_ids": branch_ids,
        "testbed_id": scope.testbed_id,
        "until": scope.until,
        "report_id": scope.report_id,
    }
    return conn.execute(_NEW_HISTORY, params).first() is not None
