"""The new-job page: a template's form (its typed, range-checked arguments) or an image
reference, submitted through ``submit_run`` as ``POST /v0/run`` is; the problems shown beside
their fields with what was entered kept, or a redirect to the new job's page."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from sqlalchemy.engine import Connection
from starlette.datastructures import FormData

from benchrunner.core.templates import Template, TemplateError
from benchrunner.protocol import is_digest
from benchrunner.server.console.csrf import CsrfChecked
from benchrunner.server.console.job_form import (
    ARG_PREFIX,
    Checked,
    ImageRef,
    JobForm,
    check_image_form,
    check_template_form,
    image_form,
    template_form,
)
from benchrunner.server.console.templating import render
from benchrunner.server.console.viewer import (
    CurrentViewer,
    Viewer,
    may_change,
    visible_project,
    writable_project,
)
from benchrunner.server.context import ServerContext
from benchrunner.server.http.deps import Ctx, Svc, origin_of
from benchrunner.server.http.errors import ApiError, not_found
from benchrunner.server.services import Services
from benchrunner.server.store import registry, runners
from benchrunner.server.store.accounts import ProjectRow
from benchrunner.server.submission.service import submit_run

router = APIRouter()

NEW_PATH = "/console/projects/{project}/jobs/new"
SHOWN_WITH_THE_FORM = frozenset({400, 429})
"""Refusals worth another try with the same values (a bad value, a full queue); the form is
shown again with them. Any other (403, 404) gets the error page."""
IMAGE = "image"


def _spec_slugs(conn: Connection) -> list[str]:
    return [row.slug for row in runners.spec_list(conn, archived=False)]


def _template(ctx: ServerContext, name: str) -> Template:
    try:
        return ctx.templates.get(name)
    except TemplateError as exc:
        raise not_found("template", name) from exc


def _page(
    request: Request,
    viewer: Viewer,
    ctx: ServerContext,
    project: ProjectRow,
    form: JobForm | None,
    *,
    may_submit: bool,
    status_code: int = 200,
) -> HTMLResponse:
    context = {
        "project": project,
        "templates": ctx.templates.all(),
        "form": form,
        "may_submit": may_submit,
    }
    return render(request, viewer, "jobs/new.html", context, status_code=status_code)


@router.get(NEW_PATH, response_class=HTMLResponse)
async def new_job(
    project: str,
    request: Request,
    viewer: CurrentViewer,
    ctx: Ctx,
    template: Annotated[str, Query(max_length=256)] = "",
    kind: Annotated[str, Query(max_length=16)] = "",
) -> HTMLResponse:
    """The list of templates (and the image form's link); with ``template`` (or
    ``kind=image``) that form, filled with the defaults."""

    def unit(conn: Connection) -> tuple[ProjectRow, bool, list[str]]:
        found = visible_project(conn, viewer, project)
        return found, may_change(conn, viewer, found), _spec_slugs(conn)

    found, may_submit, specs = await ctx.db.read(unit)
    form = None
    if template:
        form = template_form(_template(ctx, template), specs)
    elif kind == IMAGE:
        form = image_form(specs)
    return _page(request, viewer, ctx, found, form, may_submit=may_submit)


def _entered(raw: FormData) -> dict[str, str]:
    """A submitted form's text fields (the last value of a repeated one)."""
    return {key: value for key, value in raw.multi_items() if isinstance(value, str)}


def _resolve_image(conn: Connection, project: ProjectRow, ref: str) -> ImageRef:
    """A digest as given (``name@sha256:...`` too), or the digest a tag of the project's
    registry points at (``name:tag`` too)."""
    ref = ref.strip()
    if not ref:
        return ImageRef(None, "an image digest or tag is required")
    candidate = ref.rsplit("@", 1)[-1]
    if is_digest(candidate):
        return ImageRef(candidate)
    tag = ref.rsplit(":", 1)[-1] if ":" in ref.rsplit("/", 1)[-1] else ref
    manifest = registry.manifest_by_tag(conn, project.id, tag)
    if manifest is None:
        return ImageRef(
            None,
            f"no image tagged {tag!r} in project {project.slug!r}'s registry "
            "(give sha256:<64 hex>, or push the image first: benchrunner image push)",
        )
    return ImageRef(manifest.digest)


_FIELD_OF_MESSAGE = (
    ("spec ", "spec"),
    ("job.timeout", "timeout"),
    ("image ", "image"),
    ("settings.adapter", "adapter"),
)
"""Where a refusal from the submission itself goes, by how its message starts; any other
goes above the form."""


def _field_of(message: str, template: Template | None) -> str:
    for start, name in _FIELD_OF_MESSAGE:
        if message.startswith(start):
            return name
    if template is not None:
        for arg in template.args:
            if message.startswith(f"argument {arg!r}"):
                return ARG_PREFIX + arg
    return ""


@router.post(NEW_PATH, response_model=None)
async def submit_job(
    project: str,
    request: Request,
    viewer: CurrentViewer,
    ctx: Ctx,
    services: Svc,
    _csrf: CsrfChecked,
) -> HTMLResponse | RedirectResponse:
    entered = _entered(await request.form())
    template = _template(ctx, entered["template"]) if entered.get("template") else None

    def unit(conn: Connection) -> tuple[ProjectRow, list[str], ImageRef | None]:
        found = writable_project(conn, viewer, project)
        image = None if template else _resolve_image(conn, found, entered.get("image", ""))
        return found, _spec_slugs(conn), image

    found, specs, image = await ctx.db.read(unit)
    if template is not None:
        form = template_form(template, specs, entered)
        checked = check_template_form(found.slug, template, entered)
    else:
        form = image_form(specs, entered)
        checked = check_image_form(found.slug, entered, image or ImageRef(None))
    answer = await _submitted(request, viewer, ctx, services, checked, template)
    if isinstance(answer, RedirectResponse):
        return answer
    form = form.with_errors(answer.errors, answer.general)
    return _page(request, viewer, ctx, found, form, may_submit=True, status_code=answer.status)


@dataclass(frozen=True)
class _Refused:
    """Why a form was not submitted: by field, above the form, and the HTTP status."""

    errors: dict[str, str]
    general: str | None = None
    status: int = 400


async def _submitted(
    request: Request,
    viewer: Viewer,
    ctx: ServerContext,
    services: Services,
    checked: Checked,
    template: Template | None,
) -> RedirectResponse | _Refused:
    """The redirect to the new job, or why it was not submitted."""
    if checked.body is None:
        return _Refused(checked.errors)
    origin = origin_of(request, viewer.user)
    try:
        view = await submit_run(ctx, services, checked.body, viewer.user, origin)
    except ApiError as exc:
        if exc.status not in SHOWN_WITH_THE_FORM:
            raise
        field = _field_of(exc.message, template)
        if field:
            return _Refused({field: exc.message}, status=exc.status)
        return _Refused({}, exc.message, exc.status)
    project = view["project"]["slug"]
    return RedirectResponse(f"/console/projects/{project}/jobs/{view['job']}", status_code=303)
