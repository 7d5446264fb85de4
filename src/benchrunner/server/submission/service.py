"""The submission service: what ``POST /v0/run`` does with a body, for the API route, the
console's job form and the calibrations alike (docs/decisions/submission.md).

The body and the mode it asks for are read in ``body``; here the run finds (or, for an
anonymous run, creates) its project, branch and testbed, applies its thresholds, and stores
the report with its metrics judged, or the job a runner will take.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import secrets
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from sqlalchemy.engine import Connection

from benchrunner import adapters
from benchrunner.api.run import RunBody
from benchrunner.core.templates import ArgValue, Template, TemplateError
from benchrunner.core.versions import DEFAULT_MAX_VERSIONS
from benchrunner.detection.models import Model
from benchrunner.protocol import JsonDuet, JsonDuetSide, JsonJobConfig
from benchrunner.server.context import ServerContext
from benchrunner.server.http.errors import bad_request
from benchrunner.server.moves.move import Move
from benchrunner.server.processing.evaluation import series_thresholds_to_judge
from benchrunner.server.processing.judgment import JudgmentLater
from benchrunner.server.processing.metric_parts import first_part
from benchrunner.server.processing.results import report_metrics
from benchrunner.server.services import Services
from benchrunner.server.store import (
    accounts,
    branches,
    jobs,
    pending_judgments,
    reports,
    thresholds,
)
from benchrunner.server.store import idempotency as keys
from benchrunner.server.store.accounts import ProjectRow, UserRow
from benchrunner.server.store.jobs import Origin
from benchrunner.server.store.tables import testbed
from benchrunner.server.submission import idempotency
from benchrunner.server.submission.backpressure import caps_for, check_backlog
from benchrunner.server.submission.body import (
    RunMode,
    run_target,
    threshold_models,
    validate_mode,
)
from benchrunner.server.submission.direct_judgment import judge_direct
from benchrunner.server.submission.duet_body import DuetPlan
from benchrunner.server.submission.images import (
    check_registry_host,
    image_digest,
    image_project,
    job_spec,
)
from benchrunner.server.submission.projects import resolve_project
from benchrunner.server.tasks import finish_first
from benchrunner.server.views.report_json import (
    created_report_view,
    created_report_view_unread,
    full_report_view,
    new_report_view,
)

DEFAULT_TIMEOUT = 3600


def _parse_direct(body: RunBody) -> list[reports.MetricValue]:
    run_settings = body.run_settings
    settings = adapters.Settings(average=run_settings.average)
    iterations: list[list[adapters.Measurement]] = []
    for index, text in enumerate(body.results or []):
        try:
            # Text the stores cannot keep is refused whole, as anywhere in a body.
            problem = adapters.unreadable(text)
            if problem is not None:
                raise adapters.AdapterError(problem)
            iterations.append(adapters.parse(run_settings.adapter_name, text, settings))
        except adapters.AdapterError as exc:
            message = adapters.could_not_read(run_settings.adapter_name, f"results[{index}]", exc)
            raise bad_request(message) from None
    return report_metrics(iterations, run_settings.fold)


def _direct_results(body: RunBody) -> tuple[list[reports.MetricValue], bytes]:
    """A direct run's metrics, and them as its report keeps them while it awaits its judgment
    (``pending_judgments``)."""
    values = _parse_direct(body)
    return values, pending_judgments.encode(values)


def _apply_thresholds(
    conn: Connection,
    project_id: int,
    branch_id: int,
    testbed_id: int,
    models: dict[str, Model],
    reset: bool,
    now: dt.datetime,
) -> None:
    measures = reports.measure_ids(conn, project_id, models, now)
    for key, model in sorted(models.items()):
        key_ids = thresholds.SeriesKey(branch_id, testbed_id, measures[key])
        thresholds.threshold_put(conn, project_id, key_ids, model, now)
    if reset:
        thresholds.thresholds_reset(conn, branch_id, testbed_id, measures.values())


def _job_config(
    ctx: ServerContext, body: RunBody, plan: RunMode, project: ProjectRow, digests: list[str]
) -> JsonJobConfig:
    """``digests``: what ``plan.images`` name, in their order."""
    options = plan.options
    if plan.mode == "template":
        assert body.template is not None
        try:
            template = ctx.templates.get(body.template)
            # A duet's shared args may lack what each side gives: checked per side below.
            args = template.resolve_args(body.args or {}) if plan.duet is None else {}
        except TemplateError as exc:
            raise bad_request(str(exc)) from None
        timeout = options.timeout or template.timeout
        if timeout > template.timeout:
            raise bad_request(
                f"job.timeout {timeout} exceeds template {template.name!r}'s limit of "
                f"{template.timeout} s"
            )
        duet = None
        if plan.duet is not None:
            duet = _template_duet(template, body.args or {}, plan.duet)
            args = dict(duet.baseline.args or {})
        return JsonJobConfig(
            template=template.name,
            args=args,
            timeout=timeout,
            iter=plan.duet.rounds if plan.duet else options.iter or 1,
            file_paths=options.file_paths,
            duet=duet,
            build_time=options.build_time,
            file_size=options.file_size,
        )
    return JsonJobConfig(
        registry=ctx.settings.base_url(),
        project=project.uuid,
        digest=digests[0],
        entrypoint=options.entrypoint,
        cmd=options.cmd,
        env=options.env,
        timeout=options.timeout or DEFAULT_TIMEOUT,
        iter=plan.duet.rounds if plan.duet else options.iter or 1,
        file_paths=options.file_paths,
        duet=None if plan.duet is None else _image_duet(plan.duet, digests[0], digests[1]),
        build_time=options.build_time,
        file_size=options.file_size,
        allow_failure=options.allow_failure,
        backdate=options.backdate,
    )


def _duet(plan: DuetPlan, baseline: JsonDuetSide, contender: JsonDuetSide) -> JsonDuet:
    options = plan.options
    return JsonDuet(
        baseline=baseline,
        contender=contender,
        # Recorded in the job's config: the order of the rounds and the bootstrap repeat.
        seed=secrets.randbits(63) if options.seed is None else options.seed,
        confidence=options.confidence,
        resamples=options.resamples,
        margin=options.margin,
    )


def _template_duet(template: Template, shared: dict[str, ArgValue], plan: DuetPlan) -> JsonDuet:
    sides: list[JsonDuetSide] = []
    for name, side in (("baseline", plan.baseline), ("contender", plan.contender)):
        try:
            args = template.resolve_args({**shared, **(side.args or {})})
        except TemplateError as exc:
            raise bad_request(f"{name}.args: {exc}") from None
        sides.append(JsonDuetSide(args=args))
    return _duet(plan, sides[0], sides[1])


def _image_duet(plan: DuetPlan, baseline: str, contender: str) -> JsonDuet:
    return _duet(plan, JsonDuetSide(digest=baseline), JsonDuetSide(digest=contender))


@dataclass(frozen=True)
class _Submitted:
    report_id: int
    job_uuid: UUID | None
    spec_id: int | None
    """Set when a runner job was created (the dispatcher is woken for its spec)."""
    deduplicated: bool = False
    view: dict[str, Any] | None = None
    """The created report as the API answers it, read in the unit (None when deduplicated, or
    built later from ``created``)."""
    now: dt.datetime | None = None
    """The submission's time, which a hand-off claimed apart (``HandOffs.claim_apart``) keeps."""
    created: Any | None = None
    """A job handed to a waiting runner: its report's row, whose view (``view``) is built once
    the job went out, off the path of its pickup."""
    judge: JudgmentLater | None = None
    """A direct run's report that thresholds judge, after the commit and before the answer
    (``judge_direct``); ``view`` is then the report without its metrics, answered should
    the read after the judgment fail."""


async def submit_run(
    ctx: ServerContext,
    services: Services,
    body: RunBody,
    user: UserRow | None,
    origin: Origin,
    idempotency_key: str | None = None,
) -> dict[str, Any]:
    """Everything ``POST /v0/run`` does with a body, for the API and the console alike: the
    report (and job) created, or the one an idempotency key repeats (``deduplicated``), as
    the API answers it; ``origin.reached`` is a host an image reference may name this server
    by. Raises ``ApiError`` (400 naming the field, 404, 429)."""
    plan = validate_mode(body)
    run_settings = body.run_settings
    if run_settings.adapter_name not in adapters.ADAPTERS:
        raise bad_request(
            f"settings.adapter {run_settings.adapter_name!r} is not supported "
            f"(supported: {sorted(adapters.ADAPTERS)})"
        )
    for image in plan.images:
        check_registry_host(image, origin.reached, ctx.settings.base_url())
    # Parsing a large body takes milliseconds to seconds: not on the event loop.
    direct_values, direct_kept = (
        await asyncio.to_thread(_direct_results, body) if plan.mode == "direct" else ([], b"")
    )
    target = run_target(body)
    models = threshold_models(body)
    start = body.start_point
    start_point = (
        None
        if start is None
        else branches.StartPoint(
            start.branch,
            start.hash,
            start.max_versions or DEFAULT_MAX_VERSIONS,
            bool(start.clone_thresholds),
            bool(start.reset),
        )
    )
    key = idempotency.key_ref(idempotency_key, body.idempotency_key, user, origin.source_ip)
    payload = (
        ""
        if key is None
        else idempotency.payload_hash(body.model_dump(mode="json", exclude={"idempotency_key"}))
    )
    window = dt.timedelta(seconds=ctx.settings.idempotency_window)

    def unit(conn: Connection) -> _Submitted:
        now = ctx.clock.now()
        if hand_off is not None:  # nothing claimed yet, should the unit run again
            hand_off.claim = None
        if key is not None:
            held = keys.key_claim(conn, key, payload, now, now - window)
            if held is not None:
                report_id = idempotency.replayed_report(held, key, payload, window)
                return _Submitted(report_id, None, None, deduplicated=True)
        spec = None if plan.mode == "direct" else job_spec(conn, plan.spec)
        project = resolve_project(
            conn, ctx, user, body.project or image_project(plan.image), origin.source_ip
        )
        on = branches.branch_for_run(conn, project.id, target.branch, start_point, now)
        testbed_id = reports.named_get_or_create(conn, testbed, project.id, target.testbed, now)
        if (
            on.new_head
            and on.start_point_branch_id is not None
            and start_point is not None
            and start_point.clone_thresholds
        ):
            thresholds.thresholds_clone(conn, project.id, on.start_point_branch_id, on.id, now)
        if body.thresholds is not None:
            _apply_thresholds(
                conn, project.id, on.id, testbed_id, models, bool(body.thresholds.reset), now
            )
        new_report = reports.NewReport(
            project_id=project.id,
            user_id=user.id if user else None,
            branch_id=on.id,
            testbed_id=testbed_id,
            adapter=run_settings.adapter_name,
            average=run_settings.average,
            fold=run_settings.fold,
            hash=target.hash,
            start_time=plan.options.backdate or body.start_time or now,
            end_time=plan.options.backdate or body.end_time or now,
            now=now,
        )
        if plan.mode == "direct":
            report_id, _ = reports.report_create(conn, new_report)
            _bind_and_bisect(conn, report_id)
            # On SQLite the first part of a long list of metrics now, the rest in short
            # writes of their own before the judgment (``metric_parts``).
            part, rest = first_part(conn, direct_values)
            stored = reports.metrics_add(conn, report_id, project.id, part, now)
            if rest or series_thresholds_to_judge(conn, on.id, testbed_id, stored):
                # judged after the commit, its reads off the writer (``judge_direct``); its
                # results kept until then, for recovery to judge it if a stop comes first
                pending_judgments.keep(conn, report_id, direct_kept)
                later = JudgmentLater(
                    report_id,
                    tuple(stored),
                    noisy=False,
                    rest=tuple(rest),
                    project_id=project.id,
                )
                # its answer should the read after the judgment fail: the report alone (its
                # row, no metrics), cheap to read here
                view = new_report_view(conn, report_id, None, with_metrics=False)
                return _Submitted(report_id, None, None, view=view, judge=later, now=now)
            view = new_report_view(conn, report_id, None, with_metrics=True)
            return _Submitted(report_id, None, None, view=view)
        assert spec is not None
        # A tag names the digest it points at now, for the main image and a duet's sides.
        digests = [image_digest(conn, project, image) for image in plan.images]
        org, priority = accounts.organization_for_job(conn, project.organization_id)
        new_job = jobs.NewJob(
            report_id=0,
            organization_id=org.id,
            spec_id=spec.id,
            config=_job_config(ctx, body, plan, project, digests),
            priority=priority,
            now=now,
            origin=origin,
            notify=services.hand_offs.broadcast(hand_off, spec.id),
        )
        # PostgreSQL: the job's insert claims it for the reserved runner when it may.
        claim_for = (
            None
            if hand_off is None or not claim_apart
            else hand_offs.claim_for(hand_off, new_job.priority)
        )
        created = jobs.job_create_with_report(
            conn, new_report, new_job, caps_for(ctx.settings, org.id), claim_for
        )
        if created is None:  # a cap is full: nothing was written
            check_backlog(conn, ctx.settings, org.id, org.slug)  # 429, naming the cap
            # Room again since the count (jobs left the queue): as when counted apart.
            created = jobs.job_create_with_report(conn, new_report, new_job, claim_for=claim_for)
            assert created is not None
        if hand_off is not None and claim_for is not None:
            hand_offs.claimed_by_insert(hand_off, created, new_job, claim_for)
        report_id = created.report.id
        _bind_and_bisect(conn, report_id)
        if hand_off is None:
            view = created_report_view(conn, created.report, created.job_uuid)
            return _Submitted(report_id, created.job_uuid, spec.id, view=view, now=now)
        if not claim_apart:
            services.hand_offs.claim(conn, hand_off, now)
        return _Submitted(report_id, created.job_uuid, spec.id, now=now, created=created.report)

    def _bind_and_bisect(conn: Connection, report_id: int) -> None:
        if key is not None:
            keys.key_bind(conn, key, report_id)
        reports.report_set_bisect(conn, report_id, body.bisect_range, body.bisect_image)

    # An idle runner of the job's spec gets the job claimed in the submission's transaction.
    hand_offs = services.hand_offs
    hand_off = (
        None
        if plan.mode == "direct"
        else hand_offs.reserve(plan.spec, template=plan.mode == "template")
    )
    # PostgreSQL: the hand-off's claim in the job's insert, or as one statement after the
    # commit where the insert may not make it (``claim_apart``).
    claim_apart = hand_off is not None and ctx.db.capabilities.writes_in_ctes
    # Shielded, and its outcome handed over whatever ends it (``report``): a request
    # cancelled while a database thread commits must not lose what the commit claimed.
    # A submission that writes nothing but its report, job and events (its lookups cached,
    # or found: a missing branch or testbed is created, as a retry would create it) is one
    # statement on PostgreSQL, run in autocommit (docs/explanation/lookups-cache.md). A
    # key's bind, a hand-off's claim on SQLite, thresholds, a start point, bisect data, a
    # direct run's metrics or an anonymous run's project keep the transaction.
    alone = (
        plan.mode != "direct"
        and key is None
        and (hand_off is None or claim_apart)
        and user is not None
        and body.thresholds is None
        and start_point is None
        and body.bisect_range is None
        and body.bisect_image is None
    )

    reported = False

    def report(outcome: _Submitted | None) -> Move | None:
        """The hand-off's outcome, told once: the runner reserved never stays reserved. The
        claim's move, to announce once the job went out (``HandOffs.delivered``)."""
        nonlocal reported
        if reported:
            return None
        reported = True
        return hand_offs.written(hand_off, plan.spec, outcome)

    async def write_then_claim() -> _Submitted:
        db = ctx.db
        submitted = await (db.write_each if alone else db.write)(unit)
        claimed = hand_off is None or hand_off.claim is not None
        if claim_apart and not claimed and submitted.now is not None:
            assert hand_off is not None
            await hand_offs.claim_apart(db, hand_off, submitted.now)
        return submitted

    async def write_and_claim() -> _Submitted:
        submitted: _Submitted | None = None
        claimed: Move | None = None
        try:
            # Run to its end even if this task is cancelled meanwhile (a server stopping):
            # what it committed, the job and its claim, reaches ``written``.
            submitted = await finish_first(write_then_claim())
        finally:
            claimed = report(submitted)
        if submitted.job_uuid is not None:
            await hand_offs.delivered(hand_off, claimed)  # announces ``claimed`` however it ends
        return submitted

    writing = asyncio.ensure_future(write_and_claim())
    writing.add_done_callback(lambda _: report(None))  # cancelled before its first step
    submitted = await asyncio.shield(writing)
    if submitted.created is not None:
        view = created_report_view_unread(submitted.created, submitted.job_uuid)
        if view is None:
            view = await ctx.db.read(created_report_view, submitted.created, submitted.job_uuid)
        return {**view, "deduplicated": False}
    if submitted.judge is not None:
        assert submitted.now is not None
        assert submitted.view is not None
        judged = await judge_direct(
            ctx,
            submitted.judge,
            submitted.now,
            stored=submitted.view,
            recover=services.processor.judgment_of_awaiting,
        )
        return {**judged, "deduplicated": False}
    if submitted.view is not None:
        return {**submitted.view, "deduplicated": False}
    view = await ctx.db.read(_replayed_view, submitted.report_id)
    return {**view, "deduplicated": True}


def _replayed_view(conn: Connection, report_id: int) -> dict[str, Any]:
    return full_report_view(conn, report_id, with_job=True)
