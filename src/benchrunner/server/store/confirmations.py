"""Confirmation runs (docs/how-to/thresholds-alerts.md): a runner job's report whose metric
crossed a threshold with ``confirm`` runs, the re-runs it queued (reports naming it in
``confirms_report_id``: plain re-runs, or one duet against the baseline's version), the
baseline job such a duet runs against, and the alerts held back until they decide."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.server.store.conflicts import insert_or_skip
from benchrunner.server.store.tables import (
    alert,
    benchmark,
    boundary,
    confirmation,
    duet,
    duet_result,
    job,
    measure,
    metric,
    model,
    report,
    threshold,
)

WAITING, RUNNING, DECIDED = "waiting", "running", "decided"


def confirmation_add(
    conn: Connection, report_id: int, job_id: int, runs: int, now: dt.datetime
) -> bool:
    """Record that the report's crossing waits for ``runs`` re-runs of ``job_id``; False when
    it does already."""
    row = {
        "report_id": report_id,
        "job_id": job_id,
        "runs": runs,
        "state": WAITING,
        "created": now,
        "decided": None,
    }
    return bool(conn.execute(insert_or_skip(conn, confirmation, ("report_id",)), row).rowcount)


_OPEN = (
    sa.select(confirmation.c.id).where(confirmation.c.state != DECIDED).order_by(confirmation.c.id)
)


def confirmations_open(conn: Connection) -> list[int]:
    return list(conn.execute(_OPEN).scalars())


def confirmation_get(conn: Connection, confirmation_id: int) -> Any:
    return conn.execute(sa.select(confirmation).where(confirmation.c.id == confirmation_id)).first()


def confirmation_move(
    conn: Connection, confirmation_id: int, source: str, target: str, now: dt.datetime
) -> bool:
    """The guarded move of a confirmation from ``source`` to ``target``."""
    values: dict[str, Any] = {"state": target}
    if target == DECIDED:
        values["decided"] = now
    statement = (
        confirmation.update()
        .where(confirmation.c.id == confirmation_id, confirmation.c.state == source)
        .values(**values)
    )
    return bool(conn.execute(statement).rowcount)


def confirmation_runs(conn: Connection, report_id: int) -> list[Any]:
    """The confirmation runs of a report: each one's report and job (id, uuid, status)."""
    statement = (
        sa.select(
            report.c.id.label("report_id"),
            report.c.uuid.label("report_uuid"),
            job.c.id.label("job_id"),
            job.c.uuid.label("job_uuid"),
            job.c.status,
        )
        .join(job, job.c.report_id == report.c.id)
        .where(report.c.confirms_report_id == report_id)
        .order_by(report.c.id)
    )
    return list(conn.execute(statement))


def confirmation_runs_of(conn: Connection, report_ids: Sequence[int]) -> dict[int, list[Any]]:
    """``confirmation_runs`` of many reports at once (a page of alerts)."""
    if not report_ids:
        return {}
    statement = (
        sa.select(
            report.c.confirms_report_id,
            report.c.uuid.label("report_uuid"),
            job.c.uuid.label("job_uuid"),
        )
        .join(job, job.c.report_id == report.c.id)
        .where(report.c.confirms_report_id.in_(sorted(set(report_ids))))
        .order_by(report.c.id)
    )
    found: dict[int, list[Any]] = {}
    for row in conn.execute(statement):
        found.setdefault(int(row.confirms_report_id), []).append(row)
    return found


def report_confirms(conn: Connection, report_id: int, source: Any) -> None:
    """Mark a new report as a confirmation run of ``source`` (a report row): it is kept but
    never history, and it measures the same version again, so it takes that version's number
    (``reports.report_create`` may have drawn the branch's next one)."""
    conn.execute(
        report.update()
        .where(report.c.id == report_id)
        .values(confirms_report_id=source.id, version=source.version)
    )


_PENDING_ALERTS = (
    sa.select(
        alert.c.id,
        alert.c.limit,
        alert.c.change_before,
        alert.c.change_after,
        alert.c.change_pvalue,
        boundary.c.lower_limit,
        boundary.c.upper_limit,
        boundary.c.verdict,
        boundary.c.threshold_id,
        threshold.c.bisect,
        model.c.test,
        model.c.lower_boundary,
        model.c.upper_boundary,
        model.c.min_magnitude,
        metric.c.id.label("metric_id"),
        metric.c.uuid.label("metric_uuid"),
        metric.c.benchmark_id,
        metric.c.measure_id,
        benchmark.c.name.label("benchmark_name"),
        measure.c.name.label("measure_name"),
    )
    .join(boundary, boundary.c.id == alert.c.boundary_id)
    .join(threshold, threshold.c.id == boundary.c.threshold_id)
    .join(model, model.c.id == boundary.c.model_id)
    .join(metric, metric.c.id == boundary.c.metric_id)
    .join(benchmark, benchmark.c.id == metric.c.benchmark_id)
    .join(measure, measure.c.id == metric.c.measure_id)
    .where(alert.c.report_id == sa.bindparam("report_id"), alert.c.status == "pending")
    .order_by(alert.c.id)
)


def pending_alerts(conn: Connection, report_id: int) -> list[Any]:
    """The alerts the report holds back, with what they crossed (the limits, and the model
    that drew them) and the metric they are on."""
    return list(conn.execute(_PENDING_ALERTS, {"report_id": report_id}))


def alert_decide(
    conn: Connection,
    alert_id: int,
    status: str,
    outcome: str,
    now: dt.datetime,
    change: tuple[float, float, float, float] | None = None,
    reason: str | None = None,
) -> bool:
    """Move a pending alert to ``status`` (active or suspected) with its ``outcome`` and why
    (``reason``, when the outcome alone does not say); a samples alert's step is replaced by
    the combined samples' ``change``."""
    values: dict[str, Any] = {
        "status": status,
        "confirmation": outcome,
        "confirmation_reason": reason,
        "modified": now,
    }
    if change is not None:
        values.update(
            change_before=change[0],
            change_after=change[1],
            change_magnitude=change[2],
            change_pvalue=change[3],
        )
    statement = (
        alert.update().where(alert.c.id == alert_id, alert.c.status == "pending").values(**values)
    )
    return bool(conn.execute(statement).rowcount)


def run_values(
    conn: Connection, report_ids: Sequence[int], benchmark_id: int, measure_id: int
) -> dict[int, list[Any]]:
    """Each confirmation report's metrics (id, value) of one benchmark and measure."""
    if not report_ids:
        return {}
    statement = sa.select(metric.c.report_id, metric.c.id, metric.c.value).where(
        metric.c.report_id.in_(list(report_ids)),
        metric.c.benchmark_id == benchmark_id,
        metric.c.measure_id == measure_id,
    )
    found: dict[int, list[Any]] = {}
    for row in conn.execute(statement):
        found.setdefault(int(row.report_id), []).append(row)
    return found


_EARLIER_JOBS = (
    sa.select(report.c.id)
    .join(job, job.c.report_id == report.c.id)
    .where(
        report.c.branch_id == sa.bindparam("branch_id"),
        report.c.testbed_id == sa.bindparam("testbed_id"),
        report.c.start_time < sa.bindparam("start_time"),
        report.c.version != sa.bindparam("version"),
        report.c.confirms_report_id.is_(None),
        report.c.error.is_(None),
        job.c.status == sa.bindparam("processed"),
    )
    .order_by(report.c.start_time.desc(), report.c.id.desc())
    .limit(sa.bindparam("limit"))
)


def baseline_reports(conn: Connection, source: Any, processed: int, limit: int) -> list[int]:
    """The reports of the runner jobs (``processed``: their status) on ``source``'s branch and
    testbed before it, of another version than its own, newest first: where a duet against
    the baseline's version finds that version's job."""
    if source.version is None:
        return []
    params = {
        "branch_id": source.branch_id,
        "testbed_id": source.testbed_id,
        "start_time": source.start_time,
        "version": source.version,
        "processed": processed,
        "limit": limit,
    }
    return list(conn.execute(_EARLIER_JOBS, params).scalars())


_RUN_DUETS = (
    sa.select(
        duet.c.report_id,
        duet.c.confidence,
        duet_result.c.rounds,
        duet_result.c.ratio,
        duet_result.c.lower_value,
        duet_result.c.upper_value,
        duet_result.c.lower_margin,
        duet_result.c.upper_margin,
    )
    .join(duet, duet.c.id == duet_result.c.duet_id)
    .where(
        duet.c.report_id.in_(sa.bindparam("report_ids", expanding=True)),
        duet_result.c.benchmark_id == sa.bindparam("benchmark_id"),
        duet_result.c.measure_id == sa.bindparam("measure_id"),
    )
    .order_by(duet.c.report_id)
)


def run_duet_results(
    conn: Connection, report_ids: Sequence[int], benchmark_id: int, measure_id: int
) -> list[Any]:
    """The duet ratios (with their interval, its confidence, the paired rounds and the margins)
    confirmation reports measured for one benchmark and measure, in the reports' order."""
    if not report_ids:
        return []
    params = {
        "report_ids": list(report_ids),
        "benchmark_id": benchmark_id,
        "measure_id": measure_id,
    }
    return list(conn.execute(_RUN_DUETS, params))


def is_confirmation_run(conn: Connection, report_id: int) -> bool:
    """Whether the report re-measures another's crossing."""
    found = conn.execute(
        sa.select(report.c.confirms_report_id).where(report.c.id == report_id)
    ).scalar()
    return found is not None
