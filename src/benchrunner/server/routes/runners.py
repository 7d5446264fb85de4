"""Runner administration (server scoped, admin only; seed 000) and runner-spec associations."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response
from pydantic import Field
from sqlalchemy.engine import Connection

from benchrunner.core.tokens import RunnerKeyFormat, new_runner_token
from benchrunner.server.errors import bad_request, conflict, not_found
from benchrunner.server.routes.bodies import ApiBody, text_problem
from benchrunner.server.routes.deps import (
    Admin,
    Ctx,
    Life,
    Page,
    paginate,
)
from benchrunner.server.routes.renames import identity_changes, slug_taken
from benchrunner.server.routes.specs import spec_or_404
from benchrunner.server.store import runners
from benchrunner.server.store.runners import RunnerRow
from benchrunner.server.store.tables import runner as runner_table
from benchrunner.server.views import runner_view, spec_view

router = APIRouter(tags=["runners"])


class NewRunner(ApiBody):
    name: str = Field(min_length=1, max_length=64)
    slug: str | None = Field(default=None, min_length=1, max_length=64)
    specs: list[str] = Field(default_factory=list, description="spec UUIDs or slugs to attach")
    key_format: RunnerKeyFormat = Field(
        default="hex",
        description="'hex': bencher_runner_ + 64 hex (seed 000); 'bencher': bencher_runner_ + "
        "30 letters and digits, the form Bencher's runner binary requires",
    )


class RunnerPatch(ApiBody):
    name: str | None = Field(default=None, min_length=1, max_length=64)
    slug: str | None = Field(default=None, min_length=1, max_length=64)
    archived: bool | None = None
    paused: bool | None = None


class SpecRef(ApiBody):
    spec: str = Field(min_length=1, description="spec UUID or slug")


def runner_or_404(conn: Connection, ref: str) -> RunnerRow:
    row = runners.runner_get(conn, ref)
    if row is None:
        raise not_found("runner", ref)
    return row


def _view(conn: Connection, row: RunnerRow) -> dict[str, Any]:
    return runner_view(row, runners.runner_specs(conn, row.id))


async def _close_channels(request: Request, runner_id: int, reason: str) -> None:
    await request.app.state.hub.close_runner(runner_id, reason)


@router.post("/v0/runners", status_code=201)
async def create_runner(body: NewRunner, _admin: Admin, ctx: Ctx) -> dict[str, Any]:
    token = new_runner_token(body.key_format)

    def unit(conn: Connection) -> dict[str, Any]:
        spec_rows = [spec_or_404(conn, ref) for ref in body.specs]
        row = runners.runner_create(conn, body.name, token, ctx.clock.now(), slug=body.slug)
        for spec in spec_rows:
            runners.runner_spec_add(conn, row.id, spec.id)
        key = {"key": token} if body.key_format == "bencher" else {}
        return {**_view(conn, row), "token": token, **key}

    return await ctx.db.write(unit)


@router.get("/v0/runners")
async def list_runners(
    _admin: Admin,
    ctx: Ctx,
    response: Response,
    pages: Page,
    archived: bool = False,
    name: Annotated[str | None, Query(max_length=64, description="runners with this name")] = None,
) -> list[dict[str, Any]]:
    problem = None if name is None else text_problem(name)
    if problem is not None:
        raise bad_request(f"name {problem}")

    def unit(conn: Connection) -> list[dict[str, Any]]:
        return [_view(conn, r) for r in runners.runner_list(conn, archived=archived, name=name)]

    return paginate(response, await ctx.db.read(unit), pages)


@router.get("/v0/runners/{runner}")
async def get_runner(runner: str, _admin: Admin, ctx: Ctx) -> dict[str, Any]:
    return await ctx.db.read(lambda conn: _view(conn, runner_or_404(conn, runner)))


@router.patch("/v0/runners/{runner}")
async def update_runner(
    runner: str, body: RunnerPatch, _admin: Admin, ctx: Ctx, life: Life, request: Request
) -> dict[str, Any]:
    def unit(conn: Connection) -> tuple[RunnerRow, dict[str, Any]]:
        row = runner_or_404(conn, runner)
        values = identity_changes(
            conn,
            runner_table,
            row,
            name=body.name,
            slug=body.slug,
            archived=body.archived,
            now=ctx.clock.now(),
        )
        if body.paused is not None:
            values["paused"] = body.paused
        updated = runners.runner_update(conn, row.id, values)
        if updated is None:
            raise slug_taken(values["slug"])
        return row, _view(conn, updated)

    before, view = await ctx.db.write(unit)
    if body.paused is False and before.paused:
        life.wakeups.capacity_freed()
    if body.archived and before.archived is None:
        await _close_channels(request, before.id, "runner archived")
    return view


async def _rotate(
    runner: str, key_format: RunnerKeyFormat, ctx: Ctx, request: Request
) -> tuple[RunnerRow, str]:
    token = new_runner_token(key_format)

    def unit(conn: Connection) -> RunnerRow:
        row = runner_or_404(conn, runner)
        if not runners.runner_rotate_token(conn, row.id, token, ctx.clock.now()):
            raise conflict(f"runner {runner!r} is archived; its token cannot be rotated")
        return row

    row = await ctx.db.write(unit)
    await _close_channels(request, row.id, "runner token rotated")
    return row, token


@router.post("/v0/runners/{runner}/token", status_code=201)
async def rotate_token(runner: str, _admin: Admin, ctx: Ctx, request: Request) -> dict[str, Any]:
    """A new token in seed 000's form; the old one stops working at once."""
    row, token = await _rotate(runner, "hex", ctx, request)
    return {"uuid": str(row.uuid), "token": token}


@router.post("/v0/runners/{runner}/key", status_code=201)
async def rotate_key(runner: str, _admin: Admin, ctx: Ctx, request: Request) -> dict[str, Any]:
    """A new key in Bencher's form, answered as Bencher does (``uuid``, ``key``)."""
    row, key = await _rotate(runner, "bencher", ctx, request)
    return {"uuid": str(row.uuid), "key": key}


@router.get("/v0/runners/{runner}/specs")
async def list_runner_specs(runner: str, _admin: Admin, ctx: Ctx) -> list[dict[str, Any]]:
    def unit(conn: Connection) -> list[dict[str, Any]]:
        row = runner_or_404(conn, runner)
        return [spec_view(s) for s in runners.runner_specs(conn, row.id)]

    return await ctx.db.read(unit)


@router.post("/v0/runners/{runner}/specs", status_code=201)
async def add_runner_spec(
    runner: str, body: SpecRef, _admin: Admin, ctx: Ctx, life: Life
) -> dict[str, Any]:
    def unit(conn: Connection) -> dict[str, Any]:
        row = runner_or_404(conn, runner)
        spec = spec_or_404(conn, body.spec)
        runners.runner_spec_add(conn, row.id, spec.id)
        return spec_view(spec)

    view = await ctx.db.write(unit)
    life.wakeups.capacity_freed()
    return view


@router.delete("/v0/runners/{runner}/specs/{spec}", status_code=204)
async def remove_runner_spec(runner: str, spec: str, _admin: Admin, ctx: Ctx) -> Response:
    def unit(conn: Connection) -> None:
        row = runner_or_404(conn, runner)
        spec_row = spec_or_404(conn, spec)
        if not runners.runner_spec_remove(conn, row.id, spec_row.id):
            raise not_found("runner spec", spec)

    await ctx.db.write(unit)
    return Response(status_code=204)
