"""JSON shapes of resources as Bencher's API returns them (docs/decisions/bencher-wire.md)."""

from __future__ import annotations

import json
import uuid
from typing import Any

from sqlalchemy.engine import Connection

from benchrunner.api.organizations import Member, Organization, Project
from benchrunner.api.runners import Runner
from benchrunner.api.specs import Spec
from benchrunner.api.users import CreatedToken, Token, User
from benchrunner.core.events import status_reached
from benchrunner.detection.confirmation import confirm_runs
from benchrunner.server.processing.noise import noise_view
from benchrunner.server.store import alerts as store_alerts
from benchrunner.server.store import branches, confirmations, duets, jobs, reports
from benchrunner.server.store.accounts import (
    MemberRow,
    OrganizationRow,
    ProjectRow,
    TokenRow,
    UserRow,
)
from benchrunner.server.store.jobs import JobRow
from benchrunner.server.store.runners import RunnerRow, spec_json
from benchrunner.server.views.duet import duet_view, margin_view
from benchrunner.server.views.duet import named_view as named_view


def iso(value: Any) -> str | None:
    return None if value is None else value.isoformat().replace("+00:00", "Z")


def user_view(user: UserRow) -> User:
    """A user as the API shows it: never its password hash."""
    return User(
        uuid=str(user.uuid), name=user.name, slug=user.slug, email=user.email, admin=user.admin
    )


def member_view(member: MemberRow) -> Member:
    """A member as Bencher shows one: the user, with their role in the organization."""
    user = member.user
    return Member(
        uuid=str(user.uuid),
        name=user.name,
        slug=user.slug,
        email=user.email,
        role=member.role,
        created=iso(member.created),
    )


def _token_fields(token: TokenRow) -> dict[str, str | None]:
    return {
        "uuid": str(token.uuid),
        "user": str(token.user_uuid),
        "name": token.name,
        "created": iso(token.created),
        "expiration": iso(token.expiration),
        "revoked": iso(token.revoked),
    }


def token_view(token: TokenRow) -> Token:
    """An API token without the token itself, which only its creation answer shows."""
    return Token(**_token_fields(token))


def created_token_view(token: TokenRow, secret: str) -> CreatedToken:
    """A new API token with the token itself, shown this once."""
    return CreatedToken(**_token_fields(token), token=secret)


def organization_view(org: OrganizationRow, *, claimed: bool) -> Organization:
    return Organization(
        uuid=str(org.uuid),
        name=org.name,
        slug=org.slug,
        plan=org.plan.value,
        claimed=claimed,
        created=iso(org.created),
        modified=iso(org.modified),
    )


def project_view(project: ProjectRow, org_uuid: Any) -> Project:
    return Project(
        uuid=str(project.uuid),
        organization=str(org_uuid),
        name=project.name,
        slug=project.slug,
        visibility=project.visibility,
        created=iso(project.created),
        modified=iso(project.modified),
    )


def spec_view(row: Any) -> Spec:
    """A spec as Bencher's ``JsonSpec``: specs here describe Linux machines (the runner
    executes on Linux), and ``fallback`` is when an admin made it the fallback spec."""
    view = spec_json(row).model_dump(mode="json")
    view.setdefault("os", "linux")
    view.setdefault("fallback", iso(getattr(row, "fallback", None)))
    return Spec.model_validate(view)


def runner_view(
    runner: RunnerRow, specs: list[Any], organization_uuid: uuid.UUID | None = None
) -> Runner:
    """``organization``: the owner's UUID, null for a server runner. The last time the runner
    was heard from is ``last_seen_at`` (docs/decisions/organization-runners.md);
    ``last_heartbeat_at`` (a legacy name) and ``last_heartbeat`` (this API's first name) stay for
    older readers."""
    last_seen = iso(runner.last_heartbeat)
    return Runner(
        uuid=str(runner.uuid),
        name=runner.name,
        slug=runner.slug,
        organization=None if organization_uuid is None else str(organization_uuid),
        paused=runner.paused,
        os=runner.os,
        arch=runner.arch,
        version=runner.version,
        public_key=runner.public_key,
        specs=[spec_view(s) for s in specs],
        last_seen_at=last_seen,
        last_heartbeat_at=last_seen,
        last_heartbeat=last_seen,
        created=iso(runner.created),
        modified=iso(runner.modified),
        archived=iso(runner.archived),
    )


def event_view(row: Any) -> dict[str, Any]:
    reached = status_reached(row.event_type)
    return {
        "event_type": row.event_type,
        "status": None if reached is None else reached.wire,
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
    view["signature"] = signature_view(job)
    if events is not None:
        view["events"] = [event_view(e) for e in events]
    if output is not None:
        view["output"] = output
    return view


def signature_view(job: JobRow) -> dict[str, Any]:
    """Whether the stored result was signed by its runner; only a verified signature is kept."""
    signed = job.signed
    if signed is None:
        return {"signed": False, "verified": False}
    return {
        "signed": True,
        "verified": True,
        "output_hash": signed.output_hash,
        "signature": signed.signature,
        "key_fingerprint": signed.key_fingerprint,
    }


def model_view(row: Any, *, prefix: str = "") -> dict[str, Any]:
    """A threshold model; ``prefix`` names columns read with a label prefix (``model_``)."""

    def column(name: str) -> Any:
        return getattr(row, f"{prefix}{name}" if prefix and name in _PREFIXED else name)

    view: dict[str, Any] = {
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


_PREFIXED = frozenset({"uuid", "created", "replaced"})


def boundary_view(row: Any) -> dict[str, Any]:
    """Bencher's boundary; with ``verdict`` (same, different, unknown) when the ``samples``
    test drew it."""
    view = {
        "baseline": row.baseline,
        "lower_limit": row.lower_limit,
        "upper_limit": row.upper_limit,
    }
    verdict = getattr(row, "boundary_verdict", None)
    if verdict is not None:
        view["verdict"] = verdict
    return view


def threshold_view(
    row: Any, current: Any | None, models: list[Any] | None = None
) -> dict[str, Any]:
    """A threshold (a row of ``store.thresholds``' reads) with its current model and, when
    given, every model it has had, newest first."""
    view: dict[str, Any] = {
        "uuid": str(row.uuid),
        "project": str(row.project_uuid),
        "branch": named_view(row.branch_uuid, row.branch_name, row.branch_slug),
        "testbed": named_view(row.testbed_uuid, row.testbed_name, row.testbed_slug),
        "measure": {
            **named_view(row.measure_uuid, row.measure_name, row.measure_slug),
            "units": row.measure_units,
        },
        "benchmark": None
        if row.benchmark_uuid is None
        else named_view(row.benchmark_uuid, row.benchmark_name, row.benchmark_slug),
        "model": None if current is None else model_view(current),
        "alert_when_noisy": bool(row.alert_when_noisy),
        "confirm": confirm_runs(row.confirm),
        "bisect": bool(row.bisect),
        "created": iso(row.created),
        "modified": iso(row.modified),
    }
    if models is not None:
        view["models"] = [model_view(m) for m in models]
    return view


def confirmation_view(
    outcome: str | None, runs: list[Any], reason: str | None = None
) -> dict[str, Any] | None:
    """How confirmation runs judged an alert (docs/how-to/thresholds-alerts.md): ``outcome``
    pending, confirmed, suspected or unconfirmed, the runs (job and report), and ``reason``
    when the outcome alone does not say why ("unknown after 50 rounds"); None when none did."""
    if outcome is None:
        return None
    return {
        "outcome": outcome,
        "reason": reason,
        "runs": [{"job": str(r.job_uuid), "report": str(r.report_uuid)} for r in runs],
    }


def change_between(row: Any) -> dict[str, Any] | None:
    """Where a change point's step lies
    (docs/how-to/thresholds-alerts.md#change-points-that-look-back): ``from`` the last report
    before it, ``to`` the first in it (the alert's metric's), each with its ``version`` and
    ``hash``, and ``text`` "between versions X and Y"; None when the alert does not know the
    report before (a step at the start of its history)."""
    if row.change_from_uuid is None:
        return None
    since = {
        "report": str(row.change_from_uuid),
        "version": row.change_from_version,
        "hash": row.change_from_hash,
    }
    until = {
        "report": str(row.metric_report_uuid),
        "version": row.metric_report_version,
        "hash": row.metric_report_hash,
    }
    text = f"between versions {version_label(since)} and {version_label(until)}"
    return {"from": since, "to": until, "text": text}


def version_label(at: dict[str, Any]) -> str:
    """A report's version as a person reads it: its number and short hash, either alone, or
    the report's UUID when it has neither."""
    number, git_hash = at["version"], at["hash"]
    if number is not None and git_hash:
        return f"{number} ({git_hash[:12]})"
    if number is not None:
        return str(number)
    return str(git_hash[:12]) if git_hash else str(at["report"])


def alert_view(row: Any, runs: list[Any] | None = None) -> dict[str, Any]:
    """An alert (a row of ``store.alerts``' reads) in Bencher's ``JsonAlert`` shape.
    ``report`` is the report of the metric the alert is on; ``raised_by`` the report whose
    evaluation raised it (later than ``report`` for a change point found in the history).

    ``kind`` says which: ``boundary`` (Bencher's) or ``duet``, whose ``value`` is the
    contender/baseline ratio, ``duet`` its interval and margin, ``metric`` and ``boundary``
    null, and ``threshold`` the one whose percentage model gave the margin (else null)."""
    change = None
    if row.change_pvalue is not None:
        change = {
            "before": row.change_before,
            "after": row.change_after,
            "magnitude": row.change_magnitude,
            "pvalue": row.change_pvalue,
            "between": change_between(row),
        }
    project_uuid = row.project_uuid
    branch_since = row.branch_head_reset or row.branch_created
    branch_view = {
        **_dimension(
            row.branch_uuid, row.branch_name, row.branch_slug, project_uuid, row.branch_created
        ),
        "head": {"uuid": head_uuid(row.branch_uuid, branch_since), "created": iso(branch_since)},
        "modified": iso(branch_since),
    }
    testbed_view = _dimension(
        row.testbed_uuid, row.testbed_name, row.testbed_slug, project_uuid, row.testbed_created
    )
    benchmark_view = _dimension(
        row.benchmark_uuid,
        row.benchmark_name,
        row.benchmark_slug,
        project_uuid,
        row.benchmark_created,
    )
    measure_view = {
        **_dimension(
            row.measure_uuid, row.measure_name, row.measure_slug, project_uuid, row.measure_created
        ),
        "units": row.measure_units,
    }
    threshold_found = None
    if row.threshold_uuid is not None:
        threshold_found = {
            "uuid": str(row.threshold_uuid),
            "project": str(project_uuid),
            "branch": branch_view,
            "testbed": testbed_view,
            "measure": measure_view,
            "model": model_view(row, prefix="model_"),
            "created": iso(row.threshold_created),
            "modified": iso(row.threshold_modified),
        }
    duet = row.duet_result_id is not None
    return {
        "uuid": str(row.uuid),
        "kind": "duet" if duet else "boundary",
        "report": str(row.metric_report_uuid),
        "raised_by": str(row.raised_uuid),
        "iteration": row.iteration,
        "threshold": threshold_found,
        "branch": branch_view,
        "testbed": testbed_view,
        "benchmark": benchmark_view,
        "variant": {
            "uuid": default_variant_uuid(row.benchmark_uuid),
            "benchmark": str(row.benchmark_uuid),
            "parameters": {},
            "created": iso(row.benchmark_created),
            "modified": iso(row.benchmark_created),
        },
        "measure": measure_view,
        "value": row.duet_ratio if duet else row.value,
        "metric": None
        if duet
        else {
            "uuid": str(row.metric_uuid),
            "value": row.value,
            "lower_value": row.lower_value,
            "upper_value": row.upper_value,
        },
        "boundary": None if duet else boundary_view(row),
        "duet": _duet_alert_view(row) if duet else None,
        "limit": row.limit,
        "status": row.status,
        "change": change,
        "created": iso(row.created),
        "modified": iso(row.modified),
        # Additions to Bencher's shape: the triage (docs/how-to/thresholds-alerts.md).
        "verdict": row.verdict,
        "verdict_by": verdict_user_view(row),
        "verdict_at": iso(row.verdict_at),
        "confirmation": confirmation_view(row.confirmation, runs or [], row.confirmation_reason),
        # A bisect threshold's request (docs/how-to/bisect.md): pending, started or skipped.
        "bisect": None
        if getattr(row, "bisect", None) is None
        else {"state": row.bisect, "reason": row.bisect_reason},
    }


def verdict_user_view(row: Any) -> dict[str, Any] | None:
    """Who set the alert's verdict last (no email: public projects' alerts are public)."""
    if row.verdict_user_uuid is None:
        return None
    return {
        "uuid": str(row.verdict_user_uuid),
        "name": row.verdict_user_name,
        "slug": row.verdict_user_slug,
    }


def precision_counts_view(counts: store_alerts.Precision) -> dict[str, Any]:
    return {
        "alerts": counts.alerts,
        "true_positive": counts.true_positive,
        "false_positive": counts.false_positive,
        "expected": counts.expected,
        "untriaged": counts.untriaged,
        "precision": counts.precision,
    }


def precision_view(
    project_uuid: Any, rows: list[store_alerts.ThresholdPrecision]
) -> dict[str, Any]:
    """A project's alert precision: overall and per threshold (``threshold`` null for duet
    alerts whose margin came from no threshold)."""
    return {
        "project": str(project_uuid),
        "overall": precision_counts_view(store_alerts.precision_total(rows)),
        "thresholds": [
            {
                "threshold": None if t.threshold_uuid is None else str(t.threshold_uuid),
                "branch": t.branch_name,
                "testbed": t.testbed_name,
                "measure": t.measure_name,
                **precision_counts_view(t.counts),
            }
            for t in rows
        ],
    }


def _duet_alert_view(row: Any) -> dict[str, Any]:
    return {
        "statistic": "contender / baseline",
        "rounds": row.duet_rounds,
        "ratio": row.duet_ratio,
        "lower_value": row.duet_lower_value,
        "upper_value": row.duet_upper_value,
        "margin": margin_view(
            row.duet_lower_margin,
            row.duet_upper_margin,
            row.duet_margin_source,
            row.threshold_uuid,
        ),
    }


def head_uuid(branch_uuid: Any, since: Any) -> str:
    """A branch head's UUID: heads are not rows here, so one is named by its branch and the
    moment it began (the branch's creation or its last reset), stable across reads."""
    return str(uuid.uuid5(uuid.UUID(str(branch_uuid)), f"head:{iso(since)}"))


def default_variant_uuid(benchmark_uuid: Any) -> str:
    """The UUID of a benchmark's one variant (results here carry no parameters)."""
    return str(uuid.uuid5(uuid.UUID(str(benchmark_uuid)), "variant:"))


def _metric_row_uuid(metric_uuid: Any, name: str) -> str:
    """Bencher keeps ``value``, ``lower_value`` and ``upper_value`` as separate rows; here they
    are one metric, and the bounds' rows get UUIDs derived from it."""
    return str(metric_uuid) if name == "value" else str(uuid.uuid5(metric_uuid, name))


def _dimension(uuid_: Any, name: str, slug: str, project_uuid: Any, created: Any) -> dict[str, Any]:
    """A branch, testbed, benchmark or measure in Bencher's shape; these are never modified
    in place here, so ``modified`` is their creation."""
    return {
        **named_view(uuid_, name, slug),
        "project": str(project_uuid),
        "created": iso(created),
        "modified": iso(created),
        "archived": None,
    }


def _threshold_model(found: Any, project_uuid: Any) -> dict[str, Any]:
    return {
        "uuid": str(found.threshold_uuid),
        "project": str(project_uuid),
        "model": model_view(found, prefix="model_"),
        "created": iso(found.threshold_created),
    }


def _measure_entry(
    m: Any, found: Any | None, project_uuid: Any, withheld: str | None
) -> dict[str, Any]:
    """``withheld``: why a noisy report's thresholds raised no alert (None: quiet)."""
    judged = (
        []
        if found is None
        else [
            {"threshold": _threshold_model(found, project_uuid), "boundary": boundary_view(found)}
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
    entry: dict[str, Any] = {
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
        entry["boundary"] = boundary_view(found)
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
    duet: dict[str, Any] | None = None,
    confirms: Any | None = None,
    confirmation_runs: list[Any] | None = None,
) -> dict[str, Any]:
    """A report in Bencher's shape (``JsonReport``): project, branch (with its head's version
    and start point) and testbed as objects, results per iteration -> benchmark (its one
    variant) -> measures with their metrics, threshold and boundary, and the alerts its
    evaluation raised."""
    found = boundaries or {}
    noise = noise_view(report.noise)
    withheld = None if noise is None else noise.get("alerts")
    project_uuid = report.project_uuid
    iterations: dict[int, dict[str, Any]] = {}
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
    view: dict[str, Any] = {
        "uuid": str(report.uuid),
        "project": {
            **named_view(project_uuid, report.project_name, report.project_slug),
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
        "alerts": [alert_view(a, confirmation_runs) for a in alerts or []],
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
    if duet is not None:
        view["duet"] = duet
    return view


def full_report_view(
    conn: Connection, report_id: int, job_uuid: Any = None, *, with_job: bool = False
) -> dict[str, Any]:
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
) -> dict[str, Any]:
    """``full_report_view`` of a report created in this unit, read in the unit's transaction:
    a new report is no duet's yet (a duet is stored when its job's output is processed), and
    ``with_metrics=False`` says it has no metrics (a runner job's), so neither is looked up."""
    row = reports.report_row(conn, report_id)
    metrics = reports.report_metrics(conn, report_id) if with_metrics else []
    return _stored_report_view(conn, row, metrics, job_uuid, None)


def created_report_view(conn: Connection, row: Any, job_uuid: Any) -> dict[str, Any]:
    """``new_report_view`` of a runner job's report from ``row``, as ``reports.report_row``
    reads it (returned by ``jobs.job_create_with_report``): nothing more is read, but a start
    point's branch and version."""
    return _stored_report_view(conn, row, [], job_uuid, None)


def _stored_report_view(
    conn: Connection,
    row: Any,
    metrics: list[Any],
    job_uuid: Any,
    found_duet: tuple[Any, list[Any]] | None,
) -> dict[str, Any]:
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
        duet=None if found_duet is None else duet_view(*found_duet),
    )
