"""JSON shapes of resources as Bencher's API returns them (SPEC section 13)."""

from __future__ import annotations

import json
from typing import Any

from benchrunner.server.store.accounts import OrganizationRow, ProjectRow
from benchrunner.server.store.jobs import JobRow
from benchrunner.server.store.runners import RunnerRow, spec_json


def iso(value: Any) -> str | None:
    return None if value is None else value.isoformat().replace("+00:00", "Z")


def organization_view(org: OrganizationRow, *, claimed: bool) -> dict[str, Any]:
    return {
        "uuid": str(org.uuid),
        "name": org.name,
        "slug": org.slug,
        "plan": org.plan.value,
        "claimed": claimed,
        "created": iso(org.created),
        "modified": iso(org.modified),
    }


def project_view(project: ProjectRow, org_uuid: Any) -> dict[str, Any]:
    return {
        "uuid": str(project.uuid),
        "organization": str(org_uuid),
        "name": project.name,
        "slug": project.slug,
        "visibility": project.visibility,
        "created": iso(project.created),
        "modified": iso(project.modified),
    }


def spec_view(row: Any) -> dict[str, Any]:
    return spec_json(row).model_dump(mode="json")


def runner_view(runner: RunnerRow, specs: list[Any]) -> dict[str, Any]:
    return {
        "uuid": str(runner.uuid),
        "name": runner.name,
        "slug": runner.slug,
        "paused": runner.paused,
        "os": runner.os,
        "arch": runner.arch,
        "version": runner.version,
        "specs": [spec_view(s) for s in specs],
        "last_heartbeat": iso(runner.last_heartbeat),
        "created": iso(runner.created),
        "modified": iso(runner.modified),
        "archived": iso(runner.archived),
    }


def event_view(row: Any) -> dict[str, Any]:
    return {
        "event_type": row.event_type,
        "message": row.message,
        "actor": row.actor,
        "meta": json.loads(row.meta),
        "created": iso(row.created),
    }


def job_view(
    job: JobRow,
    *,
    spec: Any,
    runner_uuid: Any,
    report_uuid: Any,
    events: list[Any] | None = None,
    output: dict[str, Any] | None = None,
) -> dict[str, Any]:
    view: dict[str, Any] = {
        "uuid": str(job.uuid),
        "status": job.status.wire,
        "kind": job.kind,
        "report": str(report_uuid),
        "project": str(job.project_uuid),
        "spec": spec_view(spec),
        "config": job.config.model_dump(mode="json", exclude_none=True),
        "timeout": job.timeout,
        "priority": job.priority,
        "runner": None if runner_uuid is None else str(runner_uuid),
        "claimed": iso(job.claimed),
        "started": iso(job.started),
        "completed": iso(job.completed),
        "last_heartbeat": iso(job.last_heartbeat),
        "created": iso(job.created),
        "modified": iso(job.modified),
    }
    if events is not None:
        view["events"] = [event_view(e) for e in events]
    if output is not None:
        view["output"] = output
    return view


def report_view(
    report: Any, project_uuid: Any, metrics: list[Any], job_uuid: Any
) -> dict[str, Any]:
    iterations: dict[int, dict[str, Any]] = {}
    for m in metrics:
        benches = iterations.setdefault(m.iteration, {})
        bench = benches.setdefault(
            m.benchmark,
            {"benchmark": {"name": m.benchmark, "uuid": str(m.benchmark_uuid)}, "measures": []},
        )
        bench["measures"].append(
            {
                "measure": {"name": m.measure, "uuid": str(m.measure_uuid)},
                "metric": {
                    "uuid": str(m.uuid),
                    "value": m.value,
                    "lower_value": m.lower_value,
                    "upper_value": m.upper_value,
                },
            }
        )
    results = [list(iterations[i].values()) for i in sorted(iterations)]
    view: dict[str, Any] = {
        "uuid": str(report.uuid),
        "project": str(project_uuid),
        "branch": {"name": report.branch_name, "uuid": str(report.branch_uuid)},
        "testbed": {"name": report.testbed_name, "uuid": str(report.testbed_uuid)},
        "adapter": report.adapter,
        "start_time": iso(report.start_time),
        "end_time": iso(report.end_time),
        "results": results,
        "error": report.error,
        "alerts": [],
        "created": iso(report.created),
    }
    if job_uuid is not None:
        view["job"] = str(job_uuid)
    return view
