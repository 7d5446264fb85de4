"""Runner administration (server scoped, admin only; docs/decisions/runner-tokens.md) and
runner-spec associations."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response
from sqlalchemy.engine import Connection

from benchrunner.api.base import text_problem
from benchrunner.api.runners import (
    CreatedRunner,
    NewRunner,
    Runner,
    RunnerKey,
    RunnerPatch,
    RunnerToken,
    SpecRef,
)
from benchrunner.api.specs import Spec
from benchrunner.core.signatures import SignatureRefused, public_key, public_key_text
from benchrunner.server.http.answers import ANSWERED
from benchrunner.server.http.errors import bad_request, not_found
from benchrunner.server.routes.deps import (
    Admin,
    Ctx,
    Page,
    Svc,
    paginate,
)
from benchrunner.server.runners import admin as runner_admin
from benchrunner.server.runners.admin import (
    EVERY_RUNNER,
    RunnerChanges,
    Scope,
    runner_or_404,
    spec_or_404,
    view_of,
)
from benchrunner.server.store import runners
from benchrunner.server.views.resources import spec_view

router = APIRouter(tags=["runners"])


def checked_public_key(text: str | None) -> str | None:
    """The key as stored (unpadded base64url), or a 400 with the reason
    (docs/decisions/signed-results.md)."""
    if text is None:
        return None
    try:
        return public_key_text(public_key(text))
    except SignatureRefused as exc:
        raise bad_request(f"public_key: {exc}") from None


NameFilter = Annotated[str | None, Query(max_length=64, description="runners with this name")]

# Each action below serves both runner scopes: a server admin's ``/v0/runners`` (every
# runner) and an organization's ``/v0/organizations/{organization}/runners`` (its own).


async def create_in(scope: Scope, body: NewRunner, ctx: Ctx) -> CreatedRunner:
    key = checked_public_key(body.public_key)
    created = await runner_admin.create(
        ctx,
        body.name,
        body.specs,
        slug=body.slug,
        public_key=key,
        key_format=body.key_format,
        scope=scope,
    )
    # Bencher answers a new runner's key as ``key``; ours has always been ``token``.
    if body.key_format == "bencher":
        return created.model_copy(update={"key": created.token})
    return created


async def list_in(
    scope: Scope, ctx: Ctx, response: Response, pages: Page, archived: bool, name: str | None
) -> list[Runner]:
    problem = None if name is None else text_problem(name)
    if problem is not None:
        raise bad_request(f"name {problem}")

    def unit(conn: Connection) -> list[Runner]:
        found = runners.runner_list(
            conn, archived=archived, name=name, organization_id=scope.organization_id
        )
        return [view_of(conn, r) for r in found]

    return paginate(response, await ctx.db.read(unit), pages)


async def get_in(scope: Scope, runner: str, ctx: Ctx) -> Runner:
    return await ctx.db.read(lambda conn: view_of(conn, runner_or_404(conn, runner, scope)))


async def update_in(
    scope: Scope, runner: str, body: RunnerPatch, ctx: Ctx, services: Svc, request: Request
) -> Runner:
    changes = RunnerChanges(
        name=body.name,
        slug=body.slug,
        archived=body.archived,
        paused=body.paused,
        public_key=checked_public_key(body.public_key),
        public_key_given="public_key" in body.model_fields_set,
    )
    hub = request.app.state.hub
    return await runner_admin.update(ctx, services, hub, runner, changes, scope)


async def rotate_token_in(scope: Scope, runner: str, ctx: Ctx, request: Request) -> RunnerToken:
    row, token = await runner_admin.rotate_token(ctx, request.app.state.hub, runner, scope=scope)
    return RunnerToken(uuid=str(row.uuid), token=token)


async def rotate_key_in(scope: Scope, runner: str, ctx: Ctx, request: Request) -> RunnerKey:
    row, key = await runner_admin.rotate_token(
        ctx, request.app.state.hub, runner, key_format="bencher", scope=scope
    )
    return RunnerKey(uuid=str(row.uuid), key=key)


@router.post("/v0/runners", status_code=201, **ANSWERED)
async def create_runner(body: NewRunner, _admin: Admin, ctx: Ctx) -> CreatedRunner:
    return await create_in(EVERY_RUNNER, body, ctx)


@router.get("/v0/runners", **ANSWERED)
async def list_runners(
    _admin: Admin,
    ctx: Ctx,
    response: Response,
    pages: Page,
    archived: bool = False,
    name: NameFilter = None,
) -> list[Runner]:
    return await list_in(EVERY_RUNNER, ctx, response, pages, archived, name)


@router.get("/v0/runners/{runner}", **ANSWERED)
async def get_runner(runner: str, _admin: Admin, ctx: Ctx) -> Runner:
    return await get_in(EVERY_RUNNER, runner, ctx)


@router.patch("/v0/runners/{runner}", **ANSWERED)
async def update_runner(
    runner: str, body: RunnerPatch, _admin: Admin, ctx: Ctx, services: Svc, request: Request
) -> Runner:
    return await update_in(EVERY_RUNNER, runner, body, ctx, services, request)


@router.post("/v0/runners/{runner}/token", status_code=201, **ANSWERED)
async def rotate_token(runner: str, _admin: Admin, ctx: Ctx, request: Request) -> RunnerToken:
    """A new token in the hex form (docs/decisions/runner-tokens.md); the old one stops working at
    once."""
    return await rotate_token_in(EVERY_RUNNER, runner, ctx, request)


@router.post("/v0/runners/{runner}/key", status_code=201, **ANSWERED)
async def rotate_key(runner: str, _admin: Admin, ctx: Ctx, request: Request) -> RunnerKey:
    """A new key in Bencher's form, answered as Bencher does (``uuid``, ``key``)."""
    return await rotate_key_in(EVERY_RUNNER, runner, ctx, request)


@router.get("/v0/runners/{runner}/specs", **ANSWERED)
async def list_runner_specs(runner: str, _admin: Admin, ctx: Ctx) -> list[Spec]:
    def unit(conn: Connection) -> list[Spec]:
        row = runner_or_404(conn, runner)
        return [spec_view(s) for s in runners.runner_specs(conn, row.id)]

    return await ctx.db.read(unit)


@router.post("/v0/runners/{runner}/specs", status_code=201, **ANSWERED)
async def add_runner_spec(
    runner: str, body: SpecRef, _admin: Admin, ctx: Ctx, services: Svc
) -> Spec:
    def unit(conn: Connection) -> Spec:
        row = runner_or_404(conn, runner)
        spec = spec_or_404(conn, body.spec)
        runners.runner_spec_add(conn, row.id, spec.id)
        return spec_view(spec)

    added = await ctx.db.write(unit)
    services.wakeups.capacity_freed()
    return added


@router.delete("/v0/runners/{runner}/specs/{spec}", status_code=204)
async def remove_runner_spec(runner: str, spec: str, _admin: Admin, ctx: Ctx) -> Response:
    def unit(conn: Connection) -> None:
        row = runner_or_404(conn, runner)
        spec_row = spec_or_404(conn, spec)
        if not runners.runner_spec_remove(conn, row.id, spec_row.id):
            raise not_found("runner spec", spec)

    await ctx.db.write(unit)
    return Response(status_code=204)
