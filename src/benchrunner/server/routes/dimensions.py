"""What the branches, testbeds, benchmarks and measures routes share: a list and a read of a
project's rows of one table, and the lookups other routes use to read a reference."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any, Literal, overload

import sqlalchemy as sa
from fastapi import APIRouter, Response
from sqlalchemy.engine import Connection

from benchrunner.server.access import project_access
from benchrunner.server.http.errors import not_found
from benchrunner.server.routes.deps import Ctx, MaybeUser, Page
from benchrunner.server.store import dimensions, reports
from benchrunner.server.views.resources import iso

View = Callable[[Any, Any], dict[str, Any]]


def dimension_view(row: Any, project_uuid: Any) -> dict[str, Any]:
    return {
        "uuid": str(row.uuid),
        "project": str(project_uuid),
        "name": row.name,
        "slug": row.slug,
        "created": iso(row.created),
    }


def in_project(conn: Connection, table: sa.Table, project_id: int, ref: str, what: str) -> Any:
    """The project's row named by ``ref`` (UUID, slug or name), or 404 naming ``what``."""
    found = dimensions.dimension_get(conn, table, project_id, ref)
    if found is None:
        raise not_found(what, ref)
    return found


def optional_id(
    conn: Connection, table: sa.Table, project_id: int, ref: str | None, what: str
) -> int | None:
    """The id of a list filter's reference, None when not given, 404 when unknown."""
    return None if ref is None else int(in_project(conn, table, project_id, ref, what).id)


def add_reads(
    router: APIRouter, plural: str, what: str, table: sa.Table, view: View = dimension_view
) -> None:
    """``GET /v0/projects/{project}/<plural>`` (by name; ``name`` filters) and
    ``GET /v0/projects/{project}/<plural>/{ref}``."""

    async def list_rows(
        project: str,
        user: MaybeUser,
        ctx: Ctx,
        response: Response,
        pages: Page,
        name: str | None = None,
        direction: Literal["asc", "desc"] = "asc",
    ) -> list[dict[str, Any]]:
        def unit(conn: Connection) -> tuple[list[dict[str, Any]], int]:
            row = project_access(conn, user, project, write=False)
            found, total = dimensions.dimension_list(
                conn,
                table,
                row.id,
                name=name,
                ascending=direction == "asc",
                limit=pages.per_page,
                offset=pages.offset,
            )
            return [view(f, row.uuid) for f in found], total

        views, total = await ctx.db.read(unit)
        response.headers["X-Total-Count"] = str(total)
        return views

    async def get_row(project: str, ref: str, user: MaybeUser, ctx: Ctx) -> dict[str, Any]:
        def unit(conn: Connection) -> dict[str, Any]:
            row = project_access(conn, user, project, write=False)
            return view(in_project(conn, table, row.id, ref, what), row.uuid)

        return await ctx.db.read(unit)

    router.add_api_route(
        f"/v0/projects/{{project}}/{plural}",
        list_rows,
        methods=["GET"],
        name=f"list_{plural}",
        summary=f"List a project's {plural}",
    )
    router.add_api_route(
        # ``ref:path``: a name may hold "/" (git branches, Criterion groups), sent
        # percent-encoded; the server sees it decoded, so one segment would not match it.
        f"/v0/projects/{{project}}/{plural}/{{ref:path}}",
        get_row,
        methods=["GET"],
        name=f"get_{what}",
        summary=f"Read one {what} by UUID, slug or name",
    )


@overload
def report_in_project(conn: Connection, project_id: int, ref: str) -> int: ...
@overload
def report_in_project(conn: Connection, project_id: int, ref: str | None) -> int | None: ...
def report_in_project(conn: Connection, project_id: int, ref: str | None) -> int | None:
    """The id of the project's report with this UUID (None when not given), or 404."""
    if ref is None:
        return None
    try:
        found = reports.report_by_uuid(conn, uuid.UUID(ref))
    except ValueError:
        found = None
    if found is None or reports.report_row(conn, found).project_id != project_id:
        raise not_found("report", ref)
    return int(found)
