"""Confirmation before alerting (docs/how-to/thresholds-alerts.md).

A runner job's metric that crosses a threshold with ``confirm`` runs (or a ``samples`` test that
answers unknown there) raises no alert at once: its alert is held back as ``pending`` and the
report gets a confirmation (``open_confirmation``, in the transaction that judged it). The
confirmation then moves (``advance``, from the ``ConfirmationDriver``): it queues the re-runs,
plain re-runs of the same job (same spec, image or template, arguments), or one duet of the
job's version against the baseline's when that version's job is known
(``processing.confirmation_duets``; more duets of the same sides while their answer is unknown
and the rounds allow); once every re-run has finished it decides each held-back alert
(``detection.confirmation``): raised (``active``, confirmed or unconfirmed) or ``suspected``.
The re-runs' reports are kept but name the report they confirm, and are never history
(``store.history``, ``store.perf``).

Direct results (a run without a runner) never confirm.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.engine import Connection

from benchrunner.core.states import JobStatus
from benchrunner.detection.confirmation import (
    Outcome,
    change_agrees,
    confirm_runs,
    decide,
    decide_duet,
    limit_agrees,
)
from benchrunner.protocol import JsonJobConfig
from benchrunner.server.processing import confirmation_duets
from benchrunner.server.processing.evaluation import threshold_series
from benchrunner.server.processing.sample_evaluation import combined_comparison, samples_step
from benchrunner.server.processing.statistics_heap import statistics_loaded
from benchrunner.server.processing.webhooks import emit_alert_event
from benchrunner.server.store import (
    accounts,
    alerts,
    confirmations,
    history,
    jobs,
    reports,
    thresholds,
)
from benchrunner.server.store.confirmations import DECIDED, RUNNING, WAITING
from benchrunner.server.store.jobs import Origin

log = logging.getLogger(__name__)

DONE = frozenset({JobStatus.PROCESSED, JobStatus.FAILED, JobStatus.CANCELED})
"""A re-run in one of these has measured all it will."""


def open_confirmation(
    conn: Connection, job: jobs.JobRow, found: list[Any], now: dt.datetime
) -> bool:
    """After a runner job's report was judged with ``confirming``: when it holds alerts back,
    record that it waits for as many re-runs as the most any of its thresholds asks
    (``found``: the thresholds it was judged by). True when it does."""
    asked = {t.threshold_id: confirm_runs(t.confirm) for t in found}
    if not any(asked.values()):
        return False
    held = confirmations.pending_alerts(conn, job.report_id)
    if not held:
        return False
    runs = max(asked.get(a.threshold_id, 0) for a in held)
    return confirmations.confirmation_add(conn, job.report_id, job.id, max(runs, 1), now)


@dataclass
class Moved:
    spec_ids: list[int] = field(default_factory=list)
    """Specs of the re-runs queued: the scheduler's wake-ups after the commit."""
    decided: bool = False


def advance(
    conn: Connection,
    confirmation_id: int,
    now: dt.datetime,
    *,
    broadcast: Callable[[int], tuple[str, str] | None],
) -> Moved:
    """Queue a waiting confirmation's re-runs, or decide a running one whose re-runs have all
    finished."""
    row = confirmations.confirmation_get(conn, confirmation_id)
    moved = Moved()
    if row is None or row.state == DECIDED:
        return moved
    if row.state == WAITING:
        job = jobs.job_get(conn, row.job_id)
        if job is None or not confirmations.confirmation_move(conn, row.id, WAITING, RUNNING, now):
            return moved
        duet = _duet_of(conn, job, row.runs)
        if duet is not None:
            queue_run(conn, job, now, broadcast, duet=duet)
            moved.spec_ids.append(job.spec_id)
            return moved
        for _ in range(row.runs):
            queue_run(conn, job, now, broadcast)
            moved.spec_ids.append(job.spec_id)
        return moved
    runs = confirmations.confirmation_runs(conn, row.report_id)
    if any(JobStatus(r.status) not in DONE for r in runs):
        return moved
    measured = [r.report_id for r in runs if JobStatus(r.status) == JobStatus.PROCESSED]
    more = _more_rounds(conn, row, runs, measured, now, broadcast)
    if more is not None:
        moved.spec_ids.append(more)
        return moved
    if not confirmations.confirmation_move(conn, row.id, RUNNING, DECIDED, now):
        return moved
    raised, to_bisect = decide_alerts(conn, row.report_id, measured, now)
    emit_alert_event(conn, "alert.raised", raised, now)
    # As a crossing raised at once would (docs/how-to/bisect.md).
    alerts.alerts_bisect_pending(conn, to_bisect)
    moved.decided = True
    return moved


def _more_rounds(
    conn: Connection,
    row: Any,
    runs: list[Any],
    measured: list[int],
    now: dt.datetime,
    broadcast: Callable[[int], tuple[str, str] | None],
) -> int | None:
    """Queue another duet of the same sides and rounds when the confirmation's duets so far
    left a held-back alert unknown and the rounds allow (``confirmation_duets.more_rounds``);
    its spec when it did. Its job's first event says why."""
    duet_jobs = [
        j for r in runs if (j := jobs.job_get(conn, r.job_id)) is not None and j.config.duet
    ]
    first = duet_jobs[0].config.duet if duet_jobs else None
    job = jobs.job_get(conn, row.job_id)
    if first is None or job is None:
        return None
    duet = _duet_of(conn, job, row.runs)
    if duet is None or duet.config.duet is None:
        return None
    if (duet.config.duet.baseline, duet.config.duet.contender) != (first.baseline, first.contender):
        return None  # the baseline's version is another now: nothing more to pool with
    held = confirmations.pending_alerts(conn, row.report_id)
    rounds_run = sum(j.config.iter for j in duet_jobs)
    why = confirmation_duets.more_rounds(conn, measured, held, rounds_run, duet.config.iter)
    if why is None:
        return None
    # Guarded, as every move of a confirmation: on PostgreSQL it holds the row meanwhile.
    if not confirmations.confirmation_move(conn, row.id, RUNNING, RUNNING, now):
        return None
    queue_run(conn, job, now, broadcast, duet=duet, because=why)
    return job.spec_id


@dataclass(frozen=True)
class Duet:
    """A confirmation's duet: its job config, and the baseline version's job and report."""

    config: JsonJobConfig
    baseline: jobs.JobRow
    report_uuid: Any


def _duet_of(conn: Connection, job: jobs.JobRow, runs: int) -> Duet | None:
    """The duet against the baseline's version that confirms ``job``'s crossing, when that
    version's job is known and ran the same thing but for its arguments or image."""
    held = confirmations.pending_alerts(conn, job.report_id)
    if not held:
        return None
    source = reports.report_row(conn, job.report_id)
    baseline = confirmation_duets.baseline_job(conn, source, job, confirmation_duets.level_of(held))
    if baseline is None:
        return None
    margin = confirmation_duets.held_margin(held)
    if margin is None:
        return None
    config = confirmation_duets.duet_config(job.config, baseline.config, runs, margin)
    if config is None:
        return None
    return Duet(config, baseline, reports.report_row(conn, baseline.report_id).uuid)


def queue_run(
    conn: Connection,
    job: jobs.JobRow,
    now: dt.datetime,
    broadcast: Callable[[int], tuple[str, str] | None],
    *,
    duet: Duet | None = None,
    because: str | None = None,
) -> None:
    """One re-run of ``job`` (or its ``duet`` against the baseline's version): a report on its
    report's branch, testbed and settings marked as confirming it, and a pending job with the
    same spec and config whose ``job_created`` says which report and metrics it confirms, and
    ``because`` when it is more than the confirmation first asked for."""
    source = reports.report_row(conn, job.report_id)
    held = confirmations.pending_alerts(conn, job.report_id)
    report_id, _ = reports.report_like(conn, source, None, now)
    confirmations.report_confirms(conn, report_id, source)
    named = ", ".join(f"{a.benchmark_name} ({a.measure_name})" for a in held)
    why = f"confirmation of report {source.uuid}, metric {named}"
    meta: dict[str, Any] = {
        "confirms_report": str(source.uuid),
        "confirms_job": str(job.uuid),
        "metrics": [str(a.metric_uuid) for a in held],
    }
    if duet is not None:
        why += f", as a duet against report {duet.report_uuid} (job {duet.baseline.uuid})"
        meta.update(baseline_report=str(duet.report_uuid), baseline_job=str(duet.baseline.uuid))
    if because is not None:
        why += f": {because}"
        meta["because"] = because
    org, priority = accounts.organization_for_job(conn, job.organization_id)
    jobs.job_create(
        conn,
        jobs.NewJob(
            report_id=report_id,
            organization_id=org.id,
            spec_id=job.spec_id,
            config=job.config if duet is None else duet.config,
            priority=priority,
            now=now,
            origin=Origin(actor=f"confirmation of report {source.uuid}", source_ip=job.source_ip),
            why=(why, meta),
            notify=broadcast(job.spec_id),
        ),
    )


def decide_alerts(
    conn: Connection, report_id: int, run_reports: list[int], now: dt.datetime
) -> tuple[list[int], list[int]]:
    """Decide each alert the report holds back from its re-runs' reports (those processed):
    the ids of the alerts raised, and of those among them whose threshold bisects."""
    raised: list[int] = []
    to_bisect: list[int] = []
    row = reports.report_row(conn, report_id)
    as_duets = confirmation_duets.ran_as_duets(conn, run_reports)
    for held in confirmations.pending_alerts(conn, report_id):
        found = confirmations.run_values(conn, run_reports, held.benchmark_id, held.measure_id)
        values = [v for report_values in found.values() for v in report_values]
        change, reason = None, None
        if as_duets:
            judged = confirmation_duets.judge_by_duets(conn, run_reports, held)
            outcome = Outcome.UNCONFIRMED if judged is None else decide_duet(judged.verdict)
            if judged is not None:
                log.info("confirmation duets of alert %s: %s", held.id, judged.told)
                if judged.verdict == "unknown":
                    reason = f"unknown after {judged.rounds} rounds"
        elif held.verdict is not None:
            outcome, change = _decide_samples(conn, row, held, list(found.values()))
        elif held.change_pvalue is not None:
            before, after = held.change_before, held.change_after
            outcome = decide([change_agrees(held.limit, before, after, v.value) for v in values])
        else:
            lower, upper = held.lower_limit, held.upper_limit
            outcome = decide([limit_agrees(held.limit, lower, upper, v.value) for v in values])
        status = "suspected" if outcome is Outcome.SUSPECTED else "active"
        decided = confirmations.alert_decide(
            conn, held.id, status, outcome.value, now, change, reason
        )
        if decided and status == "active":
            raised.append(held.id)
            if held.bisect:
                to_bisect.append(held.id)
    return raised, to_bisect


def _decide_samples(
    conn: Connection, row: Any, held: Any, runs: list[list[Any]]
) -> tuple[Outcome, tuple[float, float, float, float] | None]:
    """A ``samples`` alert: the report's run and its re-runs (each re-run's metrics) together
    against the same baseline window; confirmed when they still differ."""
    from benchrunner.detection.samples import Verdict

    statistics_loaded()
    if not any(runs):
        return Outcome.UNCONFIRMED, None
    t = next(
        (
            found
            for found in thresholds.thresholds_of_report(conn, row.id, {held.measure_id})
            if found.threshold_id == held.threshold_id
        ),
        None,
    )
    if t is None:  # the threshold is gone: nothing to judge against
        return Outcome.UNCONFIRMED, None
    cutoff = history.reset_cutoff(conn, history.scope_of(row), held.measure_id)
    own = confirmations.run_values(conn, [row.id], held.benchmark_id, held.measure_id)
    iterations = len(own.get(row.id, []))
    series = threshold_series(conn, row, t, {held.benchmark_id}, cutoff, points_per_run=iterations)
    judged = [[(v.id, v.value) for v in run] for run in [own.get(row.id, []), *runs]]
    result = combined_comparison(conn, t, series[held.benchmark_id].points(), judged)
    if result is None or result.verdict is not Verdict.DIFFERENT:
        return Outcome.SUSPECTED, None
    step = samples_step(result)
    change = None if step is None else (step.before, step.after, step.magnitude, step.pvalue)
    return Outcome.CONFIRMED, change
