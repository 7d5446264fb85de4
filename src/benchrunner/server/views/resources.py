"""Resources as the API answers them, in Bencher's shapes (docs/decisions/bencher-wire.md),
built as their ``api`` answer models; a report's is built as its JSON (``report_json``)."""

from __future__ import annotations

import json
import uuid
from typing import Any

from benchrunner.api.alerts import (
    Alert,
    AlertBisect,
    AlertDuet,
    AlertPrecision,
    AlertThreshold,
    Boundary,
    BranchDimension,
    BranchHead,
    Change,
    ChangeBetween,
    ChangeEnd,
    Confirmation,
    ConfirmationRun,
    Dimension,
    MeasureDimension,
    MetricValues,
    PrecisionCounts,
    ThresholdPrecision,
    Variant,
)
from benchrunner.api.jobs import Job, JobConfig, JobEvent, JobOutput, JobSignature
from benchrunner.api.organizations import Member, Organization, Project
from benchrunner.api.runners import Runner
from benchrunner.api.specs import Spec
from benchrunner.api.thresholds import Named, Threshold, ThresholdModel
from benchrunner.api.users import CreatedToken, Token, User
from benchrunner.core.events import status_reached
from benchrunner.detection.confirmation import confirm_runs
from benchrunner.protocol import JsonJobOutput
from benchrunner.server.store import alerts as store_alerts
from benchrunner.server.store.accounts import (
    MemberRow,
    OrganizationRow,
    ProjectRow,
    TokenRow,
    UserRow,
)
from benchrunner.server.store.jobs import JobRow
from benchrunner.server.store.runners import RunnerRow, spec_json
from benchrunner.server.views.duet import (
    DUET_STATISTIC,
    margin_view,
    named,
    named_measure,
)


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


def event_view(row: Any) -> JobEvent:
    reached = status_reached(row.event_type)
    return JobEvent(
        event_type=row.event_type,
        status=None if reached is None else reached.wire,
        message=row.message,
        actor=row.actor,
        meta=json.loads(row.meta),
        created=iso(row.created),
    )


def job_view(
    job: JobRow,
    *,
    spec: Any,
    runner_uuid: Any,
    report_uuid: Any,
    events: list[Any] | None = None,
    output: JsonJobOutput | None = None,
) -> Job:
    """A job; ``events`` and ``output`` only when given (a read of one job)."""
    view = Job(
        uuid=str(job.uuid),
        status=job.status.wire,
        kind=job.kind,
        report=str(report_uuid),
        project=str(job.project_uuid),
        spec=spec_view(spec),
        # The fields the runner's config holds, as set: those it left null are not sent.
        config=JobConfig.model_validate(job.config.model_dump(mode="json", exclude_none=True)),
        timeout=job.timeout,
        priority=job.priority,
        runner=None if runner_uuid is None else str(runner_uuid),
        claimed=iso(job.claimed),
        started=iso(job.started),
        completed=iso(job.completed),
        last_heartbeat=iso(job.last_heartbeat),
        created=iso(job.created),
        modified=iso(job.modified),
        signature=signature_view(job),
    )
    if events is not None:
        view.events = [event_view(e) for e in events]
    if output is not None:
        # Every field of the output is sent, those its stored JSON left out as their defaults
        # (an iteration's ``output: null``): the model as it dumps, not as it was parsed.
        view.output = JobOutput.model_validate(output.model_dump(mode="json"))
    return view


def signature_view(job: JobRow) -> JobSignature:
    """Whether the stored result was signed by its runner; only a verified signature is kept."""
    signed = job.signed
    if signed is None:
        return JobSignature(signed=False, verified=False)
    return JobSignature(
        signed=True,
        verified=True,
        output_hash=signed.output_hash,
        signature=signed.signature,
        key_fingerprint=signed.key_fingerprint,
    )


def model_view(row: Any, *, prefix: str = "") -> ThresholdModel:
    """A threshold model; ``prefix`` names columns read with a label prefix (``model_``)."""

    def column(name: str) -> Any:
        return getattr(row, f"{prefix}{name}" if prefix and name in MODEL_PREFIXED else name)

    view = ThresholdModel(
        uuid=str(column("uuid")),
        test=row.test,
        min_sample_size=row.min_sample_size,
        max_sample_size=row.max_sample_size,
        window=row.window_seconds,
        lower_boundary=row.lower_boundary,
        upper_boundary=row.upper_boundary,
        created=iso(column("created")),
        replaced=iso(column("replaced")),
    )
    if row.test in ("change_point", "samples"):
        view.max_pvalue = row.max_pvalue
        view.min_magnitude = row.min_magnitude
    return view


MODEL_PREFIXED = frozenset({"uuid", "created", "replaced"})
"""The columns a prefixed read of a threshold model labels ``model_uuid`` ..."""


def boundary_view(row: Any) -> Boundary:
    """Bencher's boundary; with ``verdict`` (same, different, unknown) when the ``samples``
    test drew it."""
    view = Boundary(baseline=row.baseline, lower_limit=row.lower_limit, upper_limit=row.upper_limit)
    verdict = getattr(row, "boundary_verdict", None)
    if verdict is not None:
        view.verdict = verdict
    return view


def threshold_view(row: Any, current: Any | None, models: list[Any] | None = None) -> Threshold:
    """A threshold (a row of ``store.thresholds``' reads) with its current model and, when
    given, every model it has had, newest first."""
    view = Threshold(
        uuid=str(row.uuid),
        project=str(row.project_uuid),
        branch=named(row.branch_uuid, row.branch_name, row.branch_slug),
        testbed=named(row.testbed_uuid, row.testbed_name, row.testbed_slug),
        measure=named_measure(
            row.measure_uuid, row.measure_name, row.measure_slug, row.measure_units
        ),
        benchmark=None
        if row.benchmark_uuid is None
        else named(row.benchmark_uuid, row.benchmark_name, row.benchmark_slug),
        model=None if current is None else model_view(current),
        alert_when_noisy=bool(row.alert_when_noisy),
        confirm=confirm_runs(row.confirm),
        bisect=bool(row.bisect),
        created=iso(row.created),
        modified=iso(row.modified),
    )
    if models is not None:
        view.models = [model_view(m) for m in models]
    return view


def confirmation_runs_view(runs: list[Any]) -> list[ConfirmationRun]:
    return [ConfirmationRun(job=str(r.job_uuid), report=str(r.report_uuid)) for r in runs]


def confirmation_view(
    outcome: str | None, runs: list[Any], reason: str | None = None
) -> Confirmation | None:
    """How confirmation runs judged an alert (docs/how-to/thresholds-alerts.md): ``outcome``
    pending, confirmed, suspected or unconfirmed, the runs (job and report), and ``reason``
    when the outcome alone does not say why ("unknown after 50 rounds"); None when none did."""
    if outcome is None:
        return None
    return Confirmation(outcome=outcome, reason=reason, runs=confirmation_runs_view(runs))


def change_between(row: Any) -> ChangeBetween | None:
    """Where a change point's step lies
    (docs/how-to/thresholds-alerts.md#change-points-that-look-back): ``from`` the last report
    before it, ``to`` the first in it (the alert's metric's), each with its ``version`` and
    ``hash``, and ``text`` "between versions X and Y"; None when the alert does not know the
    report before (a step at the start of its history)."""
    if row.change_from_uuid is None:
        return None
    since = ChangeEnd(
        report=str(row.change_from_uuid),
        version=row.change_from_version,
        hash=row.change_from_hash,
    )
    until = ChangeEnd(
        report=str(row.metric_report_uuid),
        version=row.metric_report_version,
        hash=row.metric_report_hash,
    )
    text = f"between versions {version_label(since)} and {version_label(until)}"
    return ChangeBetween(since=since, to=until, text=text)


def version_label(at: ChangeEnd) -> str:
    """A report's version as a person reads it: its number and short hash, either alone, or
    the report's UUID when it has neither."""
    number, git_hash = at.version, at.hash
    if number is not None and git_hash:
        return f"{number} ({git_hash[:12]})"
    if number is not None:
        return str(number)
    return str(git_hash[:12]) if git_hash else at.report


def alert_view(row: Any, runs: list[Any] | None = None) -> Alert:
    """An alert (a row of ``store.alerts``' reads) in Bencher's ``JsonAlert`` shape.
    ``report`` is the report of the metric the alert is on; ``raised_by`` the report whose
    evaluation raised it (later than ``report`` for a change point found in the history).

    ``kind`` says which: ``boundary`` (Bencher's) or ``duet``, whose ``value`` is the
    contender/baseline ratio, ``duet`` its interval and margin, ``metric`` and ``boundary``
    null, and ``threshold`` the one whose percentage model gave the margin (else null)."""
    change = None
    if row.change_pvalue is not None:
        change = Change(
            before=row.change_before,
            after=row.change_after,
            magnitude=row.change_magnitude,
            pvalue=row.change_pvalue,
            between=change_between(row),
        )
    project_uuid = row.project_uuid
    branch_since = row.branch_head_reset or row.branch_created
    branch_view = BranchDimension(
        uuid=str(row.branch_uuid),
        name=row.branch_name,
        slug=row.branch_slug,
        project=str(project_uuid),
        created=iso(row.branch_created),
        modified=iso(branch_since),
        archived=None,
        head=BranchHead(uuid=head_uuid(row.branch_uuid, branch_since), created=iso(branch_since)),
    )
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
    measure_view = _measure_dimension(
        row.measure_uuid,
        row.measure_name,
        row.measure_slug,
        row.measure_units,
        project_uuid,
        row.measure_created,
    )
    threshold_found = None
    if row.threshold_uuid is not None:
        threshold_found = AlertThreshold(
            uuid=str(row.threshold_uuid),
            project=str(project_uuid),
            branch=branch_view,
            testbed=testbed_view,
            measure=measure_view,
            model=model_view(row, prefix="model_"),
            created=iso(row.threshold_created),
            modified=iso(row.threshold_modified),
        )
    duet = row.duet_result_id is not None
    return Alert(
        uuid=str(row.uuid),
        kind="duet" if duet else "boundary",
        report=str(row.metric_report_uuid),
        raised_by=str(row.raised_uuid),
        iteration=row.iteration,
        threshold=threshold_found,
        branch=branch_view,
        testbed=testbed_view,
        benchmark=benchmark_view,
        variant=Variant(
            uuid=default_variant_uuid(row.benchmark_uuid),
            benchmark=str(row.benchmark_uuid),
            parameters={},
            created=iso(row.benchmark_created),
            modified=iso(row.benchmark_created),
        ),
        measure=measure_view,
        value=row.duet_ratio if duet else row.value,
        metric=None
        if duet
        else MetricValues(
            uuid=str(row.metric_uuid),
            value=row.value,
            lower_value=row.lower_value,
            upper_value=row.upper_value,
        ),
        boundary=None if duet else boundary_view(row),
        duet=_duet_alert_view(row) if duet else None,
        limit=row.limit,
        status=row.status,
        change=change,
        created=iso(row.created),
        modified=iso(row.modified),
        # Additions to Bencher's shape: the triage (docs/how-to/thresholds-alerts.md).
        verdict=row.verdict,
        verdict_by=verdict_user_view(row),
        verdict_at=iso(row.verdict_at),
        confirmation=confirmation_view(row.confirmation, runs or [], row.confirmation_reason),
        # A bisect threshold's request (docs/how-to/bisect.md): pending, started or skipped.
        bisect=None
        if getattr(row, "bisect", None) is None
        else AlertBisect(state=row.bisect, reason=row.bisect_reason),
    )


def verdict_user_view(row: Any) -> Named | None:
    """Who set the alert's verdict last (no email: public projects' alerts are public)."""
    if row.verdict_user_uuid is None:
        return None
    return named(row.verdict_user_uuid, row.verdict_user_name, row.verdict_user_slug)


def precision_counts_view(counts: store_alerts.Precision) -> PrecisionCounts:
    return PrecisionCounts(
        alerts=counts.alerts,
        true_positive=counts.true_positive,
        false_positive=counts.false_positive,
        expected=counts.expected,
        untriaged=counts.untriaged,
        precision=counts.precision,
    )


def precision_view(
    project_uuid: Any, rows: list[store_alerts.ThresholdPrecision]
) -> AlertPrecision:
    """A project's alert precision: overall and per threshold (``threshold`` null for duet
    alerts whose margin came from no threshold)."""
    return AlertPrecision(
        project=str(project_uuid),
        overall=precision_counts_view(store_alerts.precision_total(rows)),
        thresholds=[
            ThresholdPrecision(
                threshold=None if t.threshold_uuid is None else str(t.threshold_uuid),
                branch=t.branch_name,
                testbed=t.testbed_name,
                measure=t.measure_name,
                alerts=t.counts.alerts,
                true_positive=t.counts.true_positive,
                false_positive=t.counts.false_positive,
                expected=t.counts.expected,
                untriaged=t.counts.untriaged,
                precision=t.counts.precision,
            )
            for t in rows
        ],
    )


def _duet_alert_view(row: Any) -> AlertDuet:
    return AlertDuet(
        statistic=DUET_STATISTIC,
        rounds=row.duet_rounds,
        ratio=row.duet_ratio,
        lower_value=row.duet_lower_value,
        upper_value=row.duet_upper_value,
        margin=margin_view(
            row.duet_lower_margin,
            row.duet_upper_margin,
            row.duet_margin_source,
            row.threshold_uuid,
        ),
    )


def head_uuid(branch_uuid: Any, since: Any) -> str:
    """A branch head's UUID: heads are not rows here, so one is named by its branch and the
    moment it began (the branch's creation or its last reset), stable across reads."""
    return str(uuid.uuid5(uuid.UUID(str(branch_uuid)), f"head:{iso(since)}"))


def default_variant_uuid(benchmark_uuid: Any) -> str:
    """The UUID of a benchmark's one variant (results here carry no parameters)."""
    return str(uuid.uuid5(uuid.UUID(str(benchmark_uuid)), "variant:"))


def _dimension(uuid_: Any, name: str, slug: str, project_uuid: Any, created: Any) -> Dimension:
    """A branch, testbed, benchmark or measure in Bencher's shape; these are never modified
    in place here, so ``modified`` is their creation."""
    when = iso(created)
    return Dimension(
        uuid=str(uuid_),
        name=name,
        slug=slug,
        project=str(project_uuid),
        created=when,
        modified=when,
        archived=None,
    )


def _measure_dimension(
    uuid_: Any, name: str, slug: str, units: str, project_uuid: Any, created: Any
) -> MeasureDimension:
    when = iso(created)
    return MeasureDimension(
        uuid=str(uuid_),
        name=name,
        slug=slug,
        project=str(project_uuid),
        created=when,
        modified=when,
        archived=None,
        units=units,
    )
