"""Hardware specs (server scoped, admin only; docs/decisions/claims.md)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response
from sqlalchemy.engine import Connection

from benchrunner.api.specs import Spec, SpecBody, SpecPatch
from benchrunner.server.http.answers import ANSWERED
from benchrunner.server.http.errors import conflict
from benchrunner.server.routes.deps import Admin, Ctx, Page, paginate
from benchrunner.server.runners.admin import spec_or_404
from benchrunner.server.runners.renames import identity_changes, slug_taken
from benchrunner.server.store import runners
from benchrunner.server.store.runners import NewSpec
from benchrunner.server.store.tables import spec as spec_table
from benchrunner.server.views.resources import spec_view

router = APIRouter(tags=["specs"])

NOISE_LIMITS = ("noise_cv_limit", "noise_drift_limit")


def noise_changes(body: SpecPatch) -> dict[str, bool | float | None]:
    """The noise guard's columns a patch sets: a limit sent as null goes back to the default."""
    values: dict[str, bool | float | None] = {}
    if body.noise_guard is not None:
        values["noise_guard"] = body.noise_guard
    for name in NOISE_LIMITS:
        if name in body.model_fields_set:
            values[name] = getattr(body, name)
    return values


@router.post("/v0/specs", status_code=201, **ANSWERED)
async def create_spec(body: SpecBody, _admin: Admin, ctx: Ctx) -> Spec:
    params = NewSpec(**body.model_dump(exclude={"fallback"}))

    def unit(conn: Connection) -> Any:
        now = ctx.clock.now()
        if not body.fallback:
            return runners.spec_create(conn, params, now)
        runners.spec_lock_all(conn)
        row = runners.spec_create(conn, params, now)
        return runners.spec_set_fallback(conn, row.id, True, now)

    return spec_view(await ctx.db.write(unit))


@router.get("/v0/specs", **ANSWERED)
async def list_specs(
    _admin: Admin,
    ctx: Ctx,
    response: Response,
    pages: Page,
    archived: bool = False,
) -> list[Spec]:
    rows = await ctx.db.read(lambda conn: runners.spec_list(conn, archived=archived))
    return paginate(response, [spec_view(r) for r in rows], pages)


@router.get("/v0/specs/{spec}", **ANSWERED)
async def get_spec(spec: str, _admin: Admin, ctx: Ctx) -> Spec:
    return spec_view(await ctx.db.read(spec_or_404, spec))


@router.patch("/v0/specs/{spec}", **ANSWERED)
async def update_spec(spec: str, body: SpecPatch, _admin: Admin, ctx: Ctx) -> Spec:
    def unit(conn: Connection) -> Any:
        if body.fallback is not None:
            runners.spec_lock_all(conn)
        row = spec_or_404(conn, spec)
        if body.fallback and (row.archived is not None or body.archived):
            raise conflict(f"spec {spec!r} is archived; an archived spec cannot be the fallback")
        values = identity_changes(
            conn,
            spec_table,
            row,
            name=body.name,
            slug=body.slug,
            archived=body.archived,
            now=ctx.clock.now(),
        )
        values.update(noise_changes(body))
        if body.archived:
            values["fallback"] = None  # an archived spec takes no new jobs, fallback or not
        updated = runners.spec_update(conn, row.id, values)
        if updated is None:
            raise slug_taken(values["slug"])
        if body.fallback is not None:
            updated = runners.spec_set_fallback(conn, row.id, body.fallback, ctx.clock.now())
        return updated

    return spec_view(await ctx.db.write(unit))


@router.delete("/v0/specs/{spec}", status_code=204)
async def delete_spec(spec: str, _admin: Admin, ctx: Ctx) -> Response:
    def unit(conn: Connection) -> None:
        row = spec_or_404(conn, spec)
        if runners.spec_is_referenced(conn, row.id):
            raise conflict(f"spec {spec!r} is used by jobs or runners; archive it instead")
        runners.spec_delete(conn, row.id)

    await ctx.db.write(unit)
    return Response(status_code=204)
