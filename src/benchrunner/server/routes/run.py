"""``POST /v0/run``: direct results, or a runner job from an image or a template (seed 000).

| image | template | spec | results | mode                                   |
|-------|----------|------|---------|----------------------------------------|
| -     | -        | -    | set     | direct: parse now into a report        |
| set   | -        | set  | -       | runner: image job                      |
| -     | set      | set  | -       | runner: template job                   |
| anything else                     | 400 naming the fields                  |
"""

from __future__ import annotations

import asyncio
import datetime as dt
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, Literal
from uuid import UUID

from fastapi import APIRouter, Request
from pydantic import AwareDatetime, ConfigDict, Field, field_validator
from sqlalchemy.engine import Connection

from benchrunner import adapters
from benchrunner.adapters.values import MAX_MEASURE_NAME
from benchrunner.core import slugs
from benchrunner.core.templates import TemplateError
from benchrunner.core.tiers import Plan, priority_for
from benchrunner.detection.models import Model
from benchrunner.protocol import MAX_ITER, MAX_TIMEOUT, JsonJobConfig, is_digest
from benchrunner.server.context import ServerContext
from benchrunner.server.errors import bad_request, not_found
from benchrunner.server.evaluation import evaluate_report
from benchrunner.server.results import report_metrics
from benchrunner.server.routes.bodies import ApiBody
from benchrunner.server.routes.deps import Ctx, Life, MaybeUser, can_see, project_access
from benchrunner.server.routes.model_bodies import (
    MAX_COUNT,
    ThresholdModelBody,
    checked_hash,
    checked_model,
    is_git_hash,
)
from benchrunner.server.store import (
    accounts,
    branches,
    jobs,
    registry,
    reports,
    runners,
    thresholds,
)
from benchrunner.server.store.accounts import ProjectRow, UserRow
from benchrunner.server.store.tables import testbed
from benchrunner.server.views import full_report_view

router = APIRouter(tags=["run"])

DEFAULT_TIMEOUT = 3600
MAX_FILE_PATH = 4096


class RunJob(ApiBody):
    """Bencher's nested ``job`` object."""

    model_config = ConfigDict(extra="forbid")
    image: str | None = None
    spec: str | None = None
    entrypoint: list[str] | None = None
    cmd: list[str] | None = None
    env: dict[str, str] | None = None
    timeout: int | None = Field(default=None, ge=1, le=MAX_TIMEOUT)
    file_paths: list[str] | None = None
    iter: int | None = Field(default=None, ge=1, le=MAX_ITER)


class RunSettings(ApiBody):
    adapter: str = "magic"
    average: Literal["mean", "median"] | None = None
    fold: Literal["min", "max", "mean", "median"] | None = None


class RunStartPoint(ApiBody):
    """Bencher's ``start_point``: the branch a new branch's history starts from."""

    model_config = ConfigDict(extra="forbid")
    branch: str | None = Field(default=None, min_length=1, max_length=256)
    hash: str | None = None
    max_versions: int = Field(default=branches.DEFAULT_MAX_VERSIONS, ge=1, le=MAX_COUNT)
    clone_thresholds: bool = False
    reset: bool = False

    @field_validator("hash")
    @classmethod
    def _git_hash(cls, value: str | None) -> str | None:
        return None if value is None else checked_hash(value)


class RunThresholds(ApiBody):
    """Bencher's ``thresholds``: models by measure for this branch and testbed; ``reset``
    removes the branch/testbed's thresholds of measures not listed."""

    model_config = ConfigDict(extra="forbid")
    models: dict[str, ThresholdModelBody] = Field(default_factory=dict)
    reset: bool = False


class RunBody(ApiBody):
    project: str | None = Field(default=None, max_length=64)
    branch: str | None = Field(default=None, min_length=1, max_length=256)
    testbed: str | None = Field(default=None, min_length=1, max_length=64)
    hash: str | None = None
    start_point: RunStartPoint | None = None
    thresholds: RunThresholds | None = None
    settings: RunSettings = Field(default_factory=RunSettings)
    results: list[str] = Field(default_factory=list)
    start_time: AwareDatetime | None = None
    end_time: AwareDatetime | None = None
    image: str | None = None
    spec: str | None = None
    template: str | None = None
    args: dict[str, int | float | bool | str] | None = None
    job: RunJob | None = None
    context: dict[str, str] | None = None
    idempotency_key: str | None = None

    @field_validator("hash")
    @classmethod
    def _git_hash(cls, value: str | None) -> str | None:
        return None if value is None else checked_hash(value)

    @field_validator("start_time", "end_time")
    @classmethod
    def _in_utc(cls, value: dt.datetime | None) -> dt.datetime | None:
        """Stored as UTC; a time that has no UTC equivalent (year 1 east of Greenwich, year
        9999 west of it) is refused."""
        if value is None:
            return None
        try:
            return value.astimezone(dt.UTC)
        except OverflowError:
            raise ValueError("is out of range once converted to UTC") from None


@dataclass(frozen=True)
class RunMode:
    """What a valid body asks for once the validation table has been applied."""

    mode: Literal["direct", "image", "template"]
    image: str | None
    spec: str | None
    options: RunJob


def file_path_problem(path: str) -> str | None:
    """Why ``path`` may not name a file to collect, or None. File paths are relative to the
    job's working directory and stay inside it, for every executor: an absolute path would
    read the runner's own files, and ``..`` climbs out."""
    if not path:
        return "is empty"
    if "\x00" in path:
        return "contains a NUL character"
    if len(path) > MAX_FILE_PATH:
        return f"is longer than {MAX_FILE_PATH} characters"
    if path.startswith("/"):
        return "is absolute; give a path relative to the job's working directory"
    if ".." in PurePosixPath(path).parts:
        return "climbs out of the job's working directory with '..'"
    return None


def check_file_paths(paths: list[str] | None) -> None:
    for index, path in enumerate(paths or []):
        problem = file_path_problem(path)
        if problem is not None:
            raise bad_request(f"job.file_paths[{index}] {path!r} {problem}")


def validate_mode(body: RunBody) -> RunMode:
    nested = body.job or RunJob()
    for name in ("image", "spec"):
        top, inner = getattr(body, name), getattr(nested, name)
        if top is not None and inner is not None and top != inner:
            raise bad_request(
                f"{name} is given twice (top level and job.{name}) with different values"
            )
    image = body.image or nested.image
    spec = body.spec or nested.spec
    has_results = bool(body.results)
    if body.template is not None:
        if image is not None:
            raise bad_request("template and image are mutually exclusive: give one of them")
        if has_results:
            raise bad_request("cannot provide both results and template")
        if spec is None:
            raise bad_request("spec is required for template execution")
        if nested.env or nested.entrypoint or nested.cmd:
            raise bad_request("job.env, job.entrypoint and job.cmd are not allowed with a template")
        check_file_paths(nested.file_paths)
        return RunMode("template", None, spec, nested)
    if body.args is not None:
        raise bad_request("args are only allowed together with template")
    if image is not None and spec is not None and has_results:
        raise bad_request("cannot provide both results and image")
    if image is not None and spec is None:
        raise bad_request("spec is required for runner execution (image was given)")
    if image is None and spec is not None:
        raise bad_request("image or template is required for runner execution (spec was given)")
    if image is not None:
        if not is_digest(image):
            raise bad_request("image must be a digest: sha256: followed by 64 lowercase hex")
        check_file_paths(nested.file_paths)
        return RunMode("image", image, spec, nested)
    if not has_results:
        raise bad_request(
            "results are required for direct submission; for runner execution give "
            "image + spec or template + spec"
        )
    if body.job is not None:
        raise bad_request("job options need runner execution (image or template + spec)")
    if body.start_time is None or body.end_time is None:
        raise bad_request("start_time and end_time are required for direct submission")
    if body.start_time > body.end_time:
        raise bad_request("start_time must not be after end_time")
    return RunMode("direct", None, None, nested)


def _parse_direct(body: RunBody) -> list[reports.MetricValue]:
    settings = adapters.Settings(average=body.settings.average)
    iterations: list[list[adapters.Measurement]] = []
    for index, text in enumerate(body.results):
        try:
            iterations.append(adapters.parse(body.settings.adapter, text, settings))
        except adapters.AdapterError as exc:
            raise bad_request(f"results[{index}]: {exc}") from None
    return report_metrics(iterations, body.settings.fold)


@dataclass(frozen=True)
class Target:
    """Branch, hash and testbed of a run: the body's, else the context's (Bencher's CLI fills
    ``bencher.dev/v0/branch/ref/name``, ``.../branch/hash`` and ``.../testbed/os``), else
    Bencher's defaults. A context value that is not a valid name or hash is not used."""

    branch: str
    hash: str | None
    testbed: str


CONTEXT_BRANCH = "bencher.dev/v0/branch/ref/name"
CONTEXT_HASH = "bencher.dev/v0/branch/hash"
CONTEXT_TESTBED = "bencher.dev/v0/testbed/os"
DEFAULT_BRANCH = "main"
DEFAULT_TESTBED = "localhost"


def run_target(body: RunBody) -> Target:
    context = body.context or {}

    def named(key: str, longest: int) -> str | None:
        value = context.get(key)
        return value if value and len(value) <= longest else None

    context_hash = context.get(CONTEXT_HASH)
    if context_hash is not None and not is_git_hash(context_hash):
        context_hash = None
    return Target(
        branch=body.branch or named(CONTEXT_BRANCH, 256) or DEFAULT_BRANCH,
        hash=body.hash or (context_hash.lower() if context_hash else None),
        testbed=body.testbed or named(CONTEXT_TESTBED, 64) or DEFAULT_TESTBED,
    )


def threshold_models(body: RunBody) -> dict[str, Model]:
    """The body's threshold models, validated: 400 naming the measure and parameter. A key
    names a measure (created on first use), so it must be a name the store can hold, as a
    result's measure must."""
    if body.thresholds is None:
        return {}
    for key in body.thresholds.models:
        if not 1 <= len(key) <= MAX_MEASURE_NAME:
            raise bad_request(
                f"thresholds.models: a measure name must be 1-{MAX_MEASURE_NAME} characters, "
                f"got {len(key)}"
            )
    return {
        key: checked_model(found, f"thresholds.models.{key}")
        for key, found in body.thresholds.models.items()
    }


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


def _resolve_project(
    conn: Connection, ctx: ServerContext, user: UserRow | None, ref: str | None
) -> ProjectRow:
    """The project a run goes to: one the caller can see (then it must be allowed to write to
    it), else, for an anonymous caller, a new unclaimed public project.

    A project the caller may not see is treated as missing, so the answer never tells a
    private project from no project: 404 to a signed-in caller, and to an anonymous one a new
    project whose slug, being taken, gets a random suffix as any taken slug does.
    """
    if ref is not None:
        found = accounts.project_get(conn, ref)
        if found is not None and can_see(conn, user, found):
            return project_access(conn, user, ref, write=True, found=found)
    if user is not None or not ctx.settings.anonymous_runs:
        raise not_found("project", ref or "")
    if ref is None:
        return _unclaimed_project(conn, ctx, f"project-{slugs.with_suffix('anonymous')}")
    if accounts.ref_param(ref)[0] == "uuid":
        raise not_found("project", ref)  # a run can name a new project by slug only
    if not slugs.is_slug(ref):
        raise bad_request(
            f"project {ref!r} is neither a UUID nor a slug: use lowercase letters, digits and "
            f"'-' (e.g. {slugs.slugify(ref)!r})"
        )
    created = _unclaimed_project_exactly(conn, ctx, ref)
    if created is not None:
        return created
    # Taken: by a concurrent anonymous run that has just created it (then use it), or by a
    # project this caller may not use (then a new one, as above).
    found = accounts.project_get(conn, ref)
    if found is not None and can_see(conn, None, found):
        return project_access(conn, None, ref, write=True, found=found)
    return _unclaimed_project(conn, ctx, ref)


def _unclaimed_project(conn: Connection, ctx: ServerContext, name: str) -> ProjectRow:
    """Bencher's anonymous run: an unclaimed organization and a public project, made on the
    fly (a taken slug gets a random suffix)."""
    now = ctx.clock.now()
    org = accounts.organization_create(conn, name, Plan.FREE, now, leader_id=None)
    return accounts.project_create(conn, org.id, name, "public", now, slug=name)


def _unclaimed_project_exactly(
    conn: Connection, ctx: ServerContext, slug: str
) -> ProjectRow | None:
    """As ``_unclaimed_project`` with exactly this slug, or None (nothing created) when the
    slug is taken."""
    now = ctx.clock.now()
    with conn.begin_nested() as attempt:
        org = accounts.organization_create(conn, slug, Plan.FREE, now, leader_id=None)
        created = accounts.project_create_with_slug(conn, org.id, slug, "public", now, slug)
        if created is None:
            attempt.rollback()  # the organization made for it goes too
    return created


def _job_config(
    ctx: ServerContext, body: RunBody, plan: RunMode, project: ProjectRow
) -> JsonJobConfig:
    options = plan.options
    if plan.mode == "template":
        assert body.template is not None
        try:
            template = ctx.templates.get(body.template)
            args = template.resolve_args(body.args or {})
        except TemplateError as exc:
            raise bad_request(str(exc)) from None
        timeout = options.timeout or template.timeout
        if timeout > template.timeout:
            raise bad_request(
                f"job.timeout {timeout} exceeds template {template.name!r}'s limit of "
                f"{template.timeout} s"
            )
        return JsonJobConfig(
            template=template.name,
            args=args,
            timeout=timeout,
            iter=options.iter or 1,
            file_paths=options.file_paths,
        )
    return JsonJobConfig(
        registry=ctx.settings.base_url(),
        project=project.uuid,
        digest=plan.image,
        entrypoint=options.entrypoint,
        cmd=options.cmd,
        env=options.env,
        timeout=options.timeout or DEFAULT_TIMEOUT,
        iter=options.iter or 1,
        file_paths=options.file_paths,
    )


@router.post("/v0/run", status_code=201)
async def run(
    body: RunBody, request: Request, user: MaybeUser, ctx: Ctx, life: Life
) -> dict[str, Any]:
    plan = validate_mode(body)
    if body.settings.adapter not in adapters.ADAPTERS:
        raise bad_request(
            f"settings.adapter {body.settings.adapter!r} is not supported "
            f"(supported: {sorted(adapters.ADAPTERS)})"
        )
    direct_values = _parse_direct(body) if plan.mode == "direct" else []
    target = run_target(body)
    models = threshold_models(body)
    start = body.start_point
    start_point = (
        None
        if start is None
        else branches.StartPoint(
            start.branch, start.hash, start.max_versions, start.clone_thresholds, start.reset
        )
    )
    source_ip = request.client.host if request.client else "0.0.0.0"
    actor = user.email if user else f"anonymous@{source_ip}"

    def unit(conn: Connection) -> tuple[int, UUID, UUID | None, int | None]:
        project = _resolve_project(conn, ctx, user, body.project)
        now = ctx.clock.now()
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
                conn, project.id, on.id, testbed_id, models, body.thresholds.reset, now
            )
        report_id, _ = reports.report_create(
            conn,
            reports.NewReport(
                project_id=project.id,
                user_id=user.id if user else None,
                branch_id=on.id,
                testbed_id=testbed_id,
                adapter=body.settings.adapter,
                average=body.settings.average,
                fold=body.settings.fold,
                hash=target.hash,
                start_time=body.start_time or now,
                end_time=body.end_time or now,
                now=now,
            ),
        )
        spec_id: int | None = None
        job_uuid = None
        if plan.mode == "direct":
            stored = reports.metrics_add(conn, report_id, project.id, direct_values, now)
            evaluate_report(conn, report_id, stored, now)
        else:
            assert plan.spec is not None
            spec = runners.spec_get(conn, plan.spec)
            if spec is None or spec.archived is not None:
                raise bad_request(f"spec {plan.spec!r} not found (or archived)")
            if plan.image is not None and not registry.manifest_exists(
                conn, project.id, plan.image
            ):
                raise bad_request(
                    f"image {plan.image} is not in project {project.slug!r}'s registry: "
                    "push it first (benchrunner image push)"
                )
            org = accounts.organization_by_id(conn, project.organization_id)
            claimed = accounts.organization_is_claimed(conn, org.id)
            _, job_uuid = jobs.job_create(
                conn,
                jobs.NewJob(
                    report_id=report_id,
                    organization_id=org.id,
                    source_ip=source_ip,
                    spec_id=spec.id,
                    config=_job_config(ctx, body, plan, project),
                    priority=priority_for(org.plan, claimed=claimed),
                    now=now,
                    actor=actor,
                ),
            )
            spec_id = spec.id
        return report_id, project.uuid, job_uuid, spec_id

    report_id, _, job_uuid, spec_id = await ctx.db.write(unit)
    if spec_id is not None:
        life.wakeups.job_created(spec_id)
        await asyncio.sleep(0)  # let the dispatcher hand the job to an idle runner first

    return await ctx.db.read(full_report_view, report_id, job_uuid)
