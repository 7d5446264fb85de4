"""Calibrations (docs/how-to/thresholds-alerts.md): what a calibration's runs say of each
benchmark's noise, the threshold proposed for it, whether the spec has drifted since, and the
proposal applied as per-benchmark thresholds on the target branch and testbed (for the API's
routes and the console's pages alike: ``apply_in_project``)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy.engine import Connection

from benchrunner.core.states import JobStatus
from benchrunner.detection import calibration as statistic
from benchrunner.detection.models import Model, TestKind, validate
from benchrunner.server.access import members_project
from benchrunner.server.context import ServerContext
from benchrunner.server.http.errors import conflict, not_found
from benchrunner.server.processing.noise import noise_view, stored_verdict
from benchrunner.server.processing.statistics_heap import statistics_loaded, statistics_ready
from benchrunner.server.store import calibrations, thresholds
from benchrunner.server.store.accounts import UserRow
from benchrunner.server.views.resources import iso

FINISHED = (JobStatus.PROCESSED, JobStatus.FAILED, JobStatus.CANCELED)

SIGN_IN_TO = "calibrate a project's thresholds"
"""What an anonymous caller is asked to sign in to do."""


def proposed_model(proposal: statistic.Proposal) -> Model:
    return validate(
        Model(
            test=TestKind.T_TEST,
            lower_boundary=proposal.boundary,
            upper_boundary=proposal.boundary,
            max_sample_size=statistic.PROPOSED_MAX_SAMPLE_SIZE,
        )
    )


def _state(runs: list[calibrations.RunState], wanted: int) -> tuple[str, int, int]:
    """(state, processed runs, failed runs): ``running`` while a run is not finished, then
    ``done`` with at least ``MIN_RUNS`` processed, else ``failed``."""
    processed = sum(r.status is JobStatus.PROCESSED for r in runs)
    failed = sum(r.status in (JobStatus.FAILED, JobStatus.CANCELED) for r in runs)
    if len(runs) < wanted or any(r.status not in FINISHED for r in runs):
        return "running", processed, failed
    return ("done" if processed >= statistic.MIN_RUNS else "failed"), processed, failed


def stale_reason(conn: Connection, row: Any, runs: list[calibrations.RunState]) -> str | None:
    """Why the calibration no longer describes its spec: a later job on the spec whose noise
    guard saw the machine's speed drift beyond the drift limit. None while it holds."""
    if not runs:
        return None
    since = max(r.created for r in runs)
    for stored in calibrations.spec_noise_since(conn, row.spec_id, since):
        verdict = stored_verdict(noise_view(stored))
        drift = None if verdict is None else verdict.noise.drift
        if verdict is not None and drift is not None and abs(drift) > verdict.drift_limit:
            return (
                f"a later job on spec {row.spec_slug} drifted {drift * 100:+.1f}% "
                f"(limit {verdict.drift_limit * 100:g}%): calibrate again"
            )
    return None


def public(view: dict[str, Any]) -> dict[str, Any]:
    """The view as the API shows it: without the database ids ``apply`` uses."""
    return {
        **view,
        "benchmarks": [
            {k: v for k, v in entry.items() if k != "ids"} for entry in view["benchmarks"]
        ],
    }


def calibration_view(conn: Connection, row: Any) -> dict[str, Any]:
    runs = calibrations.calibration_runs(conn, row.id)
    state, processed, failed = _state(runs, row.runs)
    found = []
    if state == "done":
        statistics_loaded()
        for series in calibrations.calibration_values(conn, row.id):
            ids = {"benchmark_id": series.benchmark_id, "measure_id": series.measure_id}
            # Each iteration of a run is judged on its own: a run's false-alarm rate is shared
            # among its metrics.
            per_run = max(1, round(len(series.values) / max(1, series.runs)))
            proposal = statistic.propose(series.values, row.false_alarm_rate / per_run)
            entry: dict[str, Any] = {
                "benchmark": series.benchmark,
                "measure": series.measure_slug,
                "units": series.units,
                "runs": series.runs,
                "values": len(series.values),
                "ids": ids,
            }
            if proposal is None:
                entry["proposal"] = None
                entry["why"] = f"fewer than {statistic.MIN_RUNS} runs gave a value, or a mean of 0"
            else:
                model = proposed_model(proposal)
                entry.update(
                    mean=proposal.mean,
                    sd=proposal.sd,
                    cv=proposal.cv,
                    detectable_change=proposal.detectable_change,
                    proposal={
                        "test": model.test.value,
                        "lower_boundary": model.lower_boundary,
                        "upper_boundary": model.upper_boundary,
                        "max_sample_size": model.max_sample_size,
                    },
                )
            found.append(entry)
    return {
        "uuid": str(row.uuid),
        "spec": row.spec_slug,
        "branch": row.branch_name,
        "target": {"branch": row.target_branch_name, "testbed": row.testbed_name},
        "runs": row.runs,
        "false_alarm_rate": row.false_alarm_rate,
        "power": statistic.POWER,
        "state": state,
        "processed": processed,
        "failed": failed,
        "jobs": [
            {
                "report": r.report_uuid,
                "job": r.job_uuid,
                "status": None if r.status is None else r.status.name.lower(),
            }
            for r in runs
        ],
        "stale": stale_reason(conn, row, runs),
        "benchmarks": found,
        "created": iso(row.created),
        "applied": iso(row.applied),
    }


def apply(conn: Connection, row: Any, view: dict[str, Any], now: dt.datetime) -> list[str]:
    """The proposal made the per-benchmark thresholds of the target branch and testbed (each
    one's earlier model kept in its history); the thresholds' UUIDs."""
    applied = []
    for entry in view["benchmarks"]:
        if entry["proposal"] is None:
            continue
        key = thresholds.SeriesKey(
            branch_id=row.target_branch_id,
            testbed_id=row.testbed_id,
            measure_id=entry["ids"]["measure_id"],
            benchmark_id=entry["ids"]["benchmark_id"],
        )
        model = validate(
            Model(
                test=TestKind.T_TEST,
                lower_boundary=entry["proposal"]["lower_boundary"],
                upper_boundary=entry["proposal"]["upper_boundary"],
                max_sample_size=entry["proposal"]["max_sample_size"],
            )
        )
        threshold_id, _ = thresholds.threshold_put(conn, row.project_id, key, model, now)
        applied.append(str(thresholds.threshold_by_id(conn, threshold_id).uuid))
    calibrations.calibration_applied(conn, row.id, now)
    return applied


def calibration_in_project(conn: Connection, project_id: int, ref: str) -> Any:
    found = calibrations.calibration_get(conn, project_id, ref)
    if found is None:
        raise not_found("calibration", ref)
    return found


async def apply_in_project(
    ctx: ServerContext, project: str, calibration: str, user: UserRow | None
) -> dict[str, Any]:
    """``apply`` for a signed-in member who may change the project: the calibration's view
    with the thresholds it set; 409 until it is done."""

    def unit(conn: Connection) -> dict[str, Any]:
        row = members_project(conn, user, project, SIGN_IN_TO)
        found = calibration_in_project(conn, row.id, calibration)
        view = calibration_view(conn, found)
        if view["state"] != "done":
            raise conflict(f"the calibration is {view['state']}: only a done one can be applied")
        applied = apply(conn, found, view, ctx.clock.now())
        again = calibration_view(conn, calibration_in_project(conn, row.id, calibration))
        return {**public(again), "thresholds": applied}

    await statistics_ready()
    return await ctx.db.write(unit)
