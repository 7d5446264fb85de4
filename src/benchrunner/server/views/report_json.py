"""A report's answer built as its JSON (``api.reports.Report``'s, ``RunAnswer``'s for a
submission), not as the model: ``POST /v0/run`` answers every submission with it, sent as built
(``http.answers``), where building a model per benchmark, measure and metric cost a direct
submission of 20 metrics a fifth more server CPU (benchmarks/RESULTS.md). The reads of a report
validate it as ``Report``; tests check it against the model. The perf query's points share its
threshold model and boundary (``model_json``, ``boundary_json``)."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy.engine import Connection

from benchrunner.server.http.answers import BuiltJson
from benchrunner.server.processing.noise import noise_view
from benchrunner.server.store import alerts as store_alerts
from benchrunner.server.store import branches, confirmations, duets, jobs, reports
from benchrunner.server.views.duet import duet_view
from benchrunner.server.views.resources import (
    MODEL_PREFIXED,
    alert_view,
    default_variant_uuid,
    head_uuid,
    iso,
)


def _named(uuid_: Any, name: str, slug: str) -> BuiltJson:
    return {"uuid": str(uuid_), "name": name, "slug": slug}


def model_json(row: Any, *, prefix: str = "") -> BuiltJson:
    """``views.model_view``'s ``ThresholdModel`` as JSON; ``prefix`` names columns read with a
    label prefix (``model_``)."""

    def column(name: str) -> Any:
        return getattr(row, f"{prefix}{name}" if prefix and name in MODEL_PREFIXED else name)

    view: BuiltJson = {
        "uuid": str(column("uuid")),
        "test": row.test,
        "min_sample_size": row.min_sample_size,
        "max_sample_size": row.max_sample_size,
        "window": row.window_seconds,
        "lower_boundary": row.lower_boundary,
        "upper_boundary": row.upper_boundary,
        "created": iso(column("created")),
        "replaced": iso(column("replaced")),
    }
    if row.test in ("change_point", "samples"):
        view["max_pvalue"] = row.max_pvalue
        view["min_magnitude"] = row.min_magnitude
    return view


def boundary_json(row: Any) -> BuiltJson:
    """``Boundary``'s JSON (``views.boundary_view``'s): Bencher's boundary; with ``verdict``
    (same, different, unknown) when the ``samples`` test drew it."""
    view = {
        "baseline": row.baseline,
        "lower_limit": row.lower_limit,
        "upper_limit": row.upper_limit,
    }
    verdict = getattr(row, "boundary_verdict", None)
    if verdict is not None:
        view["verdict"] = verdict
    return view


def _metric_row_uuid(metric_uuid: Any, name: str) -> str:
    """Bencher keeps ``value``, ``lower_value`` and ``upper_value`` as separate rows; here they
    are one metric, and the bounds' rows get UUIDs derived from it."""
    return str(metric_uuid) if name == "value" else str(uuid.uuid5(metric_uuid, name))


def _dimension(uuid_: Any, name: str, slug: str, project_uuid: Any, created: Any) -> BuiltJson:
    """A branch, testbed, benchmark or measure in Bencher's shape; these are never modified
    in place here, so ``modified`` is their creation."""
    return {
        **_named(uuid_, name, slug),
        "project": str(project_uuid),
        "created": iso(created),
        "modified": iso(created),
        "archived": None,
    }


def _threshold_model(found: Any, project_uuid: Any) -> BuiltJson:
    return {
        "uuid": str(found.threshold_uuid),
        "project": str(project_uuid),
        "model": model_json(found, prefix="model_"),
        "created": iso(found.threshold_created),
    }


def _measure_entry(m: Any, found: Any | None, project_uuid: Any, withheld: str | None) -> BuiltJson:
    """``withheld``: why a noisy report's thresholds raised no alert (None: quiet)."""
    judged = (
        []
        if found is None
        else [
            {"threshold": _threshold_model(found, project_uuid), "boundary": boundary_json(found)}
        ]
    )
    metrics = [{"name": "value", "uuid": str(m.uuid), "value": m.value, "boundaries": judged}]
    for name in ("lower_value", "upper_value"):
        if getattr(m, name) is not None:
            metrics.append(
                {
                    "name": name,
                    "uuid": _metric_row_uuid(m.uuid, name),
                    "value": getattr(m, name),
                    "boundaries": [],
                }
            )
    entry: BuiltJson = {
        "measure": {
            **_dimension(
                m.measure_uuid, m.measure, m.measure_slug, project_uuid, m.measure_created
            ),
            "units": m.measure_units,
        },
        "metric": {
            "uuid": str(m.uuid),
            "value": m.value,
            "lower_value": m.lower_value,
            "upper_value": m.upper_value,
        },
        "metrics": metrics,
    }
    if found is None:  # Bencher's JsonReportMeasure has both, null when unjudged
        entry["threshold"] = entry["boundary"] = None
    else:
        entry["threshold"] = {
            **_threshold_model(found, project_uuid),
            "alert_when_noisy": bool(found.alert_when_noisy),
        }
        entry["boundary"] = boundary_json(found)
        if found.alert_confirmation is not None:
            entry["confirmation"] = found.alert_confirmation
        if withheld is not None and not found.alert_when_noisy:
            entry["alert"] = withheld
    return entry


def report_view(
    report: Any,
    metrics: list[Any],
    job_uuid: Any,
    *,
    boundaries: dict[int, Any] | None = None,
    alerts: list[Any] | None = None,
    start_point: Any | None = None,
    start_point_hash: str | None = None,
    duet: BuiltJson | None = None,
    confirms: Any | None = None,
    confirmation_runs: list[Any] | None = None,
) -> BuiltJson:
    """A report in Bencher's shape (``JsonReport``): project, branch (with its head's version
    and start point) and testbed as objects, results per iteration -> benchmark (its one
    variant) -> measures with their metrics, threshold and boundary, and the alerts its
    evaluation raised; ``judgment`` ``pending`` while a direct run's report awaits its
    judgment."""
    found = boundaries or {}
    noise = noise_view(report.noise)
    withheld = None if noise is None else noise.get("alerts")
    project_uuid = report.project_uuid
    iterations: dict[int, BuiltJson] = {}
    for m in metrics:
        benches = iterations.setdefault(m.iteration, {})
        bench = benches.setdefault(
            m.benchmark,
            {
                "iteration": m.iteration,
                "benchmark": _dimension(
                    m.benchmark_uuid,
                    m.benchmark,
                    m.benchmark_slug,
                    project_uuid,
                    m.benchmark_created,
                ),
                "variant": {"uuid": default_variant_uuid(m.benchmark_uuid), "parameters": {}},
                "measures": [],
            },
        )
        bench["measures"].append(_measure_entry(m, found.get(m.id), project_uuid, withheld))
    results = [list(iterations[i].values()) for i in sorted(iterations)]
    head_start = None
    if start_point is not None:
        head_start = {
            "branch": str(start_point.uuid),
            "head": head_uuid(start_point.uuid, start_point.head_reset or start_point.created),
            "version": {"number": report.start_point_version, "hash": start_point_hash},
            "max_versions": report.start_point_max_versions,
        }
    head_since = report.head_reset or report.branch_created
    view: BuiltJson = {
        "uuid": str(report.uuid),
        "project": {
            **_named(project_uuid, report.project_name, report.project_slug),
            "organization": str(report.organization_uuid),
            "visibility": report.project_visibility,
            "bmf_version": 0,
            "url": None,
            "claimed": None,
            "created": iso(report.project_created),
            "modified": iso(report.project_modified),
        },
        "branch": {
            **_dimension(
                report.branch_uuid,
                report.branch_name,
                report.branch_slug,
                project_uuid,
                report.branch_created,
            ),
            "head": {
                "uuid": head_uuid(report.branch_uuid, head_since),
                "version": {"number": report.version, "hash": report.hash},
                "start_point": head_start,
                "created": iso(head_since),
                "replaced": None,
            },
            "modified": iso(head_since),
        },
        "testbed": {
            **_dimension(
                report.testbed_uuid,
                report.testbed_name,
                report.testbed_slug,
                project_uuid,
                report.testbed_created,
            ),
            "spec": None,
        },
        "adapter": report.adapter,
        "settings": {"adapter": report.adapter, "average": report.average, "fold": report.fold},
        "start_time": iso(report.start_time),
        "end_time": iso(report.end_time),
        "results": results,
        "error": report.error,
        "noise": noise,
        # A report's alerts are built as their models (a new report's, only when it raised any).
        "alerts": [
            alert_view(a, confirmation_runs).model_dump(exclude_unset=True, by_alias=True)
            for a in alerts or []
        ],
        "created": iso(report.created),
    }
    # Confirmation (docs/how-to/thresholds-alerts.md): the report a confirmation run
    # re-measures, or the runs that re-measured this one.
    if confirms is not None:
        view["confirms"] = str(confirms)
    if confirmation_runs:
        view["confirmation_runs"] = [
            {"job": str(r.job_uuid), "report": str(r.report_uuid)} for r in confirmation_runs
        ]
    if job_uuid is not None:
        view["job"] = str(job_uuid)
    # A direct run's report whose judgment has not ended (docs/decisions/processing.md): its
    # alerts may still come. Absent otherwise, so that Bencher's shape is unchanged.
    if report.direct_results is not None:
        view["judgment"] = "pending"
    if duet is not None:
        view["duet"] = duet
    return view


def full_report_view(
    conn: Connection, report_id: int, job_uuid: Any = None, *, with_job: bool = False
) -> BuiltJson:
    """``report_view`` of a stored report, read in one transaction. ``with_job`` looks the
    job up (a report read later) instead of taking ``job_uuid``."""
    row = reports.report_row(conn, report_id)
    if with_job:
        job = jobs.job_for_report(conn, report_id)
        job_uuid = job.uuid if job is not None else None
    metrics = reports.report_metrics(conn, report_id)
    found_duet = None if metrics else duets.duet_for_report(conn, report_id)
    return _stored_report_view(conn, row, metrics, job_uuid, found_duet)


def new_report_view(
    conn: Connection, report_id: int, job_uuid: Any, *, with_metrics: bool
) -> BuiltJson:
    """``full_report_view`` of a report created in this unit, read in the unit's transaction:
    a new report is no duet's yet (a duet is stored when its job's output is processed), and
    ``with_metrics=False`` says it has no metrics (a runner job's), so neither is looked up."""
    row = reports.report_row(conn, report_id)
    metrics = reports.report_metrics(conn, report_id) if with_metrics else []
    return _stored_report_view(conn, row, metrics, job_uuid, None)


def created_report_view(conn: Connection, row: Any, job_uuid: Any) -> BuiltJson:
    """``new_report_view`` of a runner job's report from ``row``, as ``reports.report_row``
    reads it (returned by ``jobs.job_create_with_report``): nothing more is read, but a start
    point's branch and version."""
    return _stored_report_view(conn, row, [], job_uuid, None)


def created_report_view_unread(row: Any, job_uuid: Any) -> BuiltJson | None:
    """``created_report_view`` built without a connection when it reads nothing (no start
    point, no report confirmed): a submission's answer made on the event loop, without a unit
    of its own. None when it must read."""
    if row.start_point_branch_id is not None or row.confirms_report_id is not None:
        return None
    return report_view(row, [], job_uuid, confirmation_runs=[], boundaries={}, alerts=[])


def _stored_report_view(
    conn: Connection,
    row: Any,
    metrics: list[Any],
    job_uuid: Any,
    found_duet: tuple[Any, list[Any]] | None,
) -> BuiltJson:
    report_id = row.id
    start_point = start_hash = None
    if row.start_point_branch_id is not None:
        start_point = branches.branch_by_id(conn, row.start_point_branch_id)
        if row.start_point_version is not None:
            start_hash = branches.version_hash(
                conn, row.start_point_branch_id, row.start_point_version
            )
    # A report without metrics (a runner job's, until it is processed) was judged against
    # nothing and raised nothing: the submission path skips both reads.
    return report_view(
        row,
        metrics,
        job_uuid,
        confirms=None
        if row.confirms_report_id is None
        else reports.report_row(conn, row.confirms_report_id).uuid,
        confirmation_runs=confirmations.confirmation_runs(conn, report_id) if metrics else [],
        boundaries=store_alerts.report_boundaries(conn, report_id) if metrics else {},
        alerts=store_alerts.alerts_raised_by(conn, report_id) if metrics else [],
        start_point=start_point,
        start_point_hash=start_hash,
        duet=None
        if found_duet is None
        else duet_view(*found_duet).model_dump(exclude_unset=True, by_alias=True),
    )
