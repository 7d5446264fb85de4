"""What the branches, testbeds, benchmarks and measures routes share: a list and a read of a
project's rows of one table (the lookups of a reference are ``views/lookups.py``'s)."""

from __future__ import annotations

from collections.abc import Callable
from types import GenericAlias
from typing import Any, Literal, TypeVar

import sqlalchemy as sa
from fastapi import APIRouter, Response
from sqlalchemy.engine import Connection

from benchrunner.api.dimensions import HistoryDimension
from benchrunner.server.access import project_access
from benchrunner.server.http.answers import ANSWERED
from benchrunner.server.routes.deps import Ctx, MaybeUser, Page
from benchrunner.server.store import dimensions
from benchrunner.server.views.lookups import in_project
from benchrunner.server.views.resources import iso

Dimension = TypeVar("Dimension", bound=HistoryDimension)
View = Callable[[Any, Any], HistoryDimension]
"""A row of the table and its project's UUID as the answer."""


def dimension_view(answer: type[Dimension], row: Any, project_uuid: Any, **own: Any) -> Dimension:
    """The row as ``answer``: the fields every dimension has, then ``own``."""
    return answer(
        uuid=str(row.uuid),
        project=str(project_uuid),
        name=row.name,
        slug=row.slug,
        created=iso(row.created),
        **own,
    )


def add_reads(
    router: APIRouter,
    plural: str,
    what: str,
    table: sa.Table,
    answer: type[HistoryDimension],
    view: View | None = None,
) -> None:
    """``GET /v0/projects/{project}/<plural>`` (by name; ``name`` filters) and
    ``GET /v0/projects/{project}/<plural>/{ref}``, answering ``answer`` models (built by
    ``view``; by default, the fields every dimension has)."""

    def common(row: Any, project_uuid: Any) -> HistoryDimension:
        return dimension_view(answer, row, project_uuid)

    viewed = view or common

    async def list_rows(
        project: str,
        user: MaybeUser,
        ctx: Ctx,
        response: Response,
        pages: Page,
        name: str | None = None,
        direction: Literal["asc", "desc"] = "asc",
    ) -> list[HistoryDimension]:
        def unit(conn: Connection) -> tuple[list[HistoryDimension], int]:
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
            return [viewed(f, row.uuid) for f in found], total

        answers, total = await ctx.db.read(unit)
        response.headers["X-Total-Count"] = str(total)
        return answers

    async def get_row(project: str, ref: str, user: MaybeUser, ctx: Ctx) -> HistoryDimension:
        def unit(conn: Connection) -> HistoryDimension:
            row = project_access(conn, user, project, write=False)
            return viewed(in_project(conn, table, row.id, ref, what), row.uuid)

        return await ctx.db.read(unit)

    router.add_api_route(
        f"/v0/projects/{{project}}/{plural}",
        list_rows,
        methods=["GET"],
        name=f"list_{plural}",
        summary=f"List a project's {plural}",
        response_model=GenericAlias(list, (answer,)),
        **ANSWERED,
    )
    router.add_api_route(
        # ``ref:path``: a name may hold "/" (git branches, Criterion groups), sent
        # percent-encoded; the server sees it decoded, so one segment would not match it.
        f"/v0/projects/{{project}}/{plural}/{{ref:path}}",
        get_row,
        methods=["GET"],
        name=f"get_{what}",
        summary=f"Read one {what} by UUID, slug or name",
        response_model=answer,
        **ANSWERED,
    )
