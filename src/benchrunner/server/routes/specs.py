"""Hardware specs (server scoped, admin only; seed 000)."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Response
from pydantic import Field
from sqlalchemy.engine import Connection

from benchrunner.server.errors import bad_request, conflict, not_found
from benchrunner.server.routes.bodies import ApiBody
from benchrunner.server.routes.deps import Admin, Ctx, Page, paginate
from benchrunner.server.routes.renames import identity_changes, slug_taken
from benchrunner.server.store import runners, spec_fallback
from benchrunner.server.store.runners import NewSpec
from benchrunner.server.store.tables import spec as spec_table
from benchrunner.server.views import spec_view

router = APIRouter(tags=["specs"])


class SpecBody(ApiBody):
    name: str = Field(min_length=1, max_length=64)
    slug: str | None = Field(default=None, min_length=1, max_length=64)
    architecture: Literal["x86_64", "aarch64"]
    cpu: int = Field(ge=1, le=2**31 - 1)
    memory: int = Field(ge=1, le=2**63 - 1, description="bytes")
    disk: int = Field(ge=1, le=2**63 - 1, description="bytes")
    network: bool = False


class SpecPatch(ApiBody):
    name: str | None = Field(default=None, min_length=1, max_length=64)
    slug: str | None = Field(default=None, min_length=1, max_length=64)
    archived: bool | None = None
    fallback: bool | None = None
    """True makes this the fallback spec (unmarking any other); false unmarks it."""


def spec_or_404(conn: Connection, ref: str) -> Any:
    row = runners.spec_get(conn, ref)
    if row is None:
        raise not_found("spec", ref)
    return row


@router.post("/v0/specs", status_code=201)
async def create_spec(body: SpecBody, _admin: Admin, ctx: Ctx) -> dict[str, Any]:
    params = NewSpec(**body.model_dump())
    return spec_view(await ctx.db.write(runners.spec_create, params, ctx.clock.now()))


@router.get("/v0/specs")
async def list_specs(
    _admin: Admin,
    ctx: Ctx,
    response: Response,
    pages: Page,
    archived: bool = False,
) -> list[dict[str, Any]]:
    rows = await ctx.db.read(lambda conn: runners.spec_list(conn, archived=archived))
    return paginate(response, [spec_view(r) for r in rows], pages)


@router.get("/v0/specs/{spec}")
async def get_spec(spec: str, _admin: Admin, ctx: Ctx) -> dict[str, Any]:
    return spec_view(await ctx.db.read(spec_or_404, spec))


@router.patch("/v0/specs/{spec}")
async def update_spec(spec: str, body: SpecPatch, _admin: Admin, ctx: Ctx) -> dict[str, Any]:
    def unit(conn: Connection) -> Any:
        row = spec_or_404(conn, spec)
        values = identity_changes(
            conn,
            spec_table,
            row,
            name=body.name,
            slug=body.slug,
            archived=body.archived,
            now=ctx.clock.now(),
        )
        updated = runners.spec_update(conn, row.id, values)
        if updated is None:
            raise slug_taken(values["slug"])
        if body.fallback is None:
            return updated
        if body.fallback:
            if updated.archived is not None:
                raise bad_request(f"spec {spec!r} is archived: it cannot be the fallback spec")
            spec_fallback.fallback_mark(conn, row.id, ctx.clock.now())
        else:
            spec_fallback.fallback_unmark(conn, row.id, ctx.clock.now())
        return runners.spec_by_id(conn, row.id)

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
