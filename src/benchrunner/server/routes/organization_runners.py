"""Organization runners (docs/decisions/organization-runners.md): an organization's leaders create,
update, archive and re-key runners that claim only that organization's jobs; its members list and
read them. Anyone else finds neither the organization nor its runners (404), and a runner of another
organization, or a server runner, is not found under this one's path.

The actions are those of ``/v0/runners`` (``routes.runners``), confined to the organization.
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from benchrunner.api.runners import (
    CreatedRunner,
    NewRunner,
    Runner,
    RunnerKey,
    RunnerPatch,
    RunnerToken,
)
from benchrunner.server.access import organization_access
from benchrunner.server.http.answers import ANSWERED
from benchrunner.server.routes.deps import Ctx, Page, Svc, User
from benchrunner.server.routes.runners import (
    NameFilter,
    create_in,
    get_in,
    list_in,
    rotate_key_in,
    rotate_token_in,
    update_in,
)
from benchrunner.server.runners.admin import Scope
from benchrunner.server.store.accounts import UserRow

router = APIRouter(tags=["runners"])

RUNNERS = "/v0/organizations/{organization}/runners"


async def _scope(ctx: Ctx, user: UserRow, organization: str, *, lead: bool) -> Scope:
    org = await ctx.db.read(lambda conn: organization_access(conn, user, organization, lead=lead))
    return Scope(org.id)


@router.post(RUNNERS, status_code=201, **ANSWERED)
async def create_organization_runner(
    organization: str, body: NewRunner, user: User, ctx: Ctx
) -> CreatedRunner:
    """A runner that claims only this organization's jobs, and its token (shown once)."""
    return await create_in(await _scope(ctx, user, organization, lead=True), body, ctx)


@router.get(RUNNERS, **ANSWERED)
async def list_organization_runners(
    organization: str,
    user: User,
    ctx: Ctx,
    response: Response,
    pages: Page,
    archived: bool = False,
    name: NameFilter = None,
) -> list[Runner]:
    scope = await _scope(ctx, user, organization, lead=False)
    return await list_in(scope, ctx, response, pages, archived, name)


@router.get(RUNNERS + "/{runner}", **ANSWERED)
async def get_organization_runner(organization: str, runner: str, user: User, ctx: Ctx) -> Runner:
    return await get_in(await _scope(ctx, user, organization, lead=False), runner, ctx)


@router.patch(RUNNERS + "/{runner}", **ANSWERED)
async def update_organization_runner(
    organization: str,
    runner: str,
    body: RunnerPatch,
    user: User,
    ctx: Ctx,
    services: Svc,
    request: Request,
) -> Runner:
    scope = await _scope(ctx, user, organization, lead=True)
    return await update_in(scope, runner, body, ctx, services, request)


@router.post(RUNNERS + "/{runner}/token", status_code=201, **ANSWERED)
async def rotate_organization_runner_token(
    organization: str, runner: str, user: User, ctx: Ctx, request: Request
) -> RunnerToken:
    """A new token in the hex form (docs/decisions/runner-tokens.md); the old one stops working at
    once."""
    scope = await _scope(ctx, user, organization, lead=True)
    return await rotate_token_in(scope, runner, ctx, request)


@router.post(RUNNERS + "/{runner}/key", status_code=201, **ANSWERED)
async def rotate_organization_runner_key(
    organization: str, runner: str, user: User, ctx: Ctx, request: Request
) -> RunnerKey:
    """A new key in Bencher's form, answered as Bencher does (``uuid``, ``key``)."""
    scope = await _scope(ctx, user, organization, lead=True)
    return await rotate_key_in(scope, runner, ctx, request)
