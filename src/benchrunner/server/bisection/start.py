"""A bisection started by a signed-in member (docs/how-to/bisect.md), for the API's route and
the console's form alike: the body checked, its rows made and its driver told.

An image bisection resolves ``image`` (a tag holding ``{commit}``) for every version in the
project's registry at submission: a candidate without one is skipped, good and bad must have
one. A template bisection puts each version's commit in the arguments' ``{commit}``."""

from __future__ import annotations

from sqlalchemy.engine import Connection

from benchrunner import adapters
from benchrunner.api.bisections import COMMIT_REF, Bisection, BisectionCreate
from benchrunner.api.run import COMMIT
from benchrunner.core.image_refs import ImageRef
from benchrunner.core.templates import TemplateError
from benchrunner.server.access import members_project
from benchrunner.server.bisection import rows
from benchrunner.server.bisection.actions import SIGN_IN_TO
from benchrunner.server.bisection.jobs import template_args
from benchrunner.server.bisection.views import bisection_view
from benchrunner.server.context import ServerContext
from benchrunner.server.http.errors import bad_request, not_found
from benchrunner.server.services import Services
from benchrunner.server.store import accounts, alerts, registry, reports
from benchrunner.server.store.accounts import ProjectRow, UserRow
from benchrunner.server.store.jobs import Origin
from benchrunner.server.store.tables import branch, testbed
from benchrunner.server.submission.backpressure import check_backlog
from benchrunner.server.submission.images import checked_image_ref, job_spec

DEFAULT_TIMEOUT = 3600


def versions_of(body: BisectionCreate) -> list[str]:
    """Good, then the candidates with bad last; 400 on a repeated commit."""
    candidates = list(body.candidates)
    for commit in candidates:
        if COMMIT_REF.fullmatch(commit) is None or len(commit) > 64:
            raise bad_request(f"candidates: {commit!r} is not a commit")
    if candidates[-1] != body.bad:
        candidates.append(body.bad)
    versions = [body.good, *candidates]
    if len(set(versions)) != len(versions):
        raise bad_request("candidates: a commit is repeated (or is the good one)")
    return versions


def _image_of(image: str, commit: str) -> ImageRef:
    ref = checked_image_ref("image", image.replace(COMMIT, commit))
    if ref.host is not None:
        raise bad_request("image: name a tag of the project's registry, without a registry host")
    return ref


def _digests(
    conn: Connection, project: ProjectRow, image: str, versions: list[str]
) -> list[str | None]:
    if COMMIT not in image.rpartition(":")[2]:
        raise bad_request("image: its tag must hold {commit}, e.g. sortlib:{commit}")
    found: list[str | None] = []
    for commit in versions:
        ref = _image_of(image, commit)
        if ref.repository not in (None, project.slug, str(project.uuid)):
            raise bad_request(
                f"image repository {ref.repository!r} is not project {project.slug!r}"
            )
        assert ref.tag is not None
        manifest = registry.manifest_by_tag(conn, project.id, ref.tag)
        found.append(None if manifest is None else manifest.digest)
    for name, digest, commit in (("good", found[0], versions[0]), ("bad", found[-1], versions[-1])):
        if digest is None:
            raise bad_request(
                f"{name}: no image {image.replace(COMMIT, commit)!r} in project "
                f"{project.slug!r}'s registry"
            )
    return found


async def start(
    ctx: ServerContext,
    services: Services,
    project: str,
    body: BisectionCreate,
    user: UserRow | None,
    origin: Origin,
) -> Bisection:
    """Start a bisection of ``project`` for ``user``; its first duet (bad against good) is
    queued at once. The bisection's view; raises ``ApiError`` (400 naming the field, 401 or
    403 for who may not, 404 for an unknown project, alert or spec, 429 for a full queue)."""
    if (body.image is None) == (body.template is None):
        raise bad_request("give either image (a tag with {commit}) or template (with args)")
    if body.image is not None and body.args is not None:
        raise bad_request("args are only allowed with a template")
    if body.adapter not in adapters.ADAPTERS:
        raise bad_request(f"adapter {body.adapter!r} is not supported")
    versions = versions_of(body)
    timeout = body.timeout or DEFAULT_TIMEOUT
    if body.template is not None:
        args = dict(body.args or {})
        if not any(isinstance(v, str) and COMMIT in v for v in args.values()):
            raise bad_request("args: one argument's value must hold {commit}")
        try:
            template = ctx.templates.get(body.template)
            template_args(template, args, body.good)
        except TemplateError as exc:
            raise bad_request(f"template: {exc}") from None
        timeout = min(body.timeout or template.timeout, template.timeout)

    def unit(conn: Connection) -> Bisection:
        now = ctx.clock.now()
        found = members_project(conn, user, project, SIGN_IN_TO)
        spec = job_spec(conn, body.spec)
        # A bisection queues jobs as it goes: it starts only while its organization's queue
        # has room, as a submission does.
        org, _ = accounts.organization_for_job(conn, found.organization_id)
        check_backlog(conn, ctx.settings, org.id, org.slug)
        alert_id = None
        if body.alert is not None:
            raised = alerts.alert_get(conn, found.id, body.alert)
            if raised is None:
                raise not_found("alert", body.alert)
            alert_id = int(raised.id)
        if body.image is not None:
            digests = _digests(conn, found, body.image, versions)
        else:
            digests = [None] * len(versions)
        bisection_id, _ = rows.bisection_add(
            conn,
            rows.NewBisection(
                project_id=found.id,
                spec_id=spec.id,
                user_id=None if user is None else user.id,
                branch_id=reports.named_get_or_create(conn, branch, found.id, body.branch, now),
                testbed_id=reports.named_get_or_create(conn, testbed, found.id, body.testbed, now),
                alert_id=alert_id,
                measure=body.measure,
                benchmarks=list(dict.fromkeys(body.benchmarks)),
                adapter=body.adapter,
                good=body.good,
                bad=body.bad,
                image=body.image,
                template=body.template,
                args=body.args,
                timeout=timeout,
                rounds=body.rounds,
                margin=body.margin,
                confidence=body.confidence,
                job_budget=body.job_budget,
                source_ip=origin.source_ip,
                actor=origin.actor[:320],
                now=now,
            ),
            list(zip(versions, digests, strict=True)),
        )
        for position, (commit, digest) in enumerate(zip(versions[1:], digests[1:], strict=True)):
            if body.image is not None and digest is None:
                rows.step_add(
                    conn, bisection_id, "search", position, commit, body.good, body.rounds, now,
                    status=rows.SKIPPED,
                    reason=f"no image {body.image.replace(COMMIT, commit)!r} in the registry",
                )  # fmt: skip
        return bisection_view(conn, rows.bisection_by_id(conn, bisection_id))

    view = await ctx.db.write(unit)
    services.bisections.changed()
    return view
