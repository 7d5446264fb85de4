"""The ``name`` / ``slug`` / ``archived`` part of a PATCH, shared by runners and specs."""

from __future__ import annotations

import datetime as dt
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.core import slugs
from benchrunner.server.http.errors import ApiError, bad_request, conflict
from benchrunner.server.store.accounts import select_by_ref


def slug_taken(slug: str) -> ApiError:
    """A rename to a taken slug: 409, whatever holds it (only server admins rename)."""
    return conflict(f"slug {slug!r} is taken")


def identity_changes(
    conn: Connection,
    table: sa.Table,
    row: Any,
    *,
    name: str | None,
    slug: str | None,
    archived: bool | None,
    now: dt.datetime,
) -> dict[str, Any]:
    """Column values for a rename, a new slug (validated and free) or (un)archiving."""
    values: dict[str, Any] = {"modified": now}
    if name is not None:
        values["name"] = name
    if slug is not None and slug != row.slug:
        if not slugs.is_slug(slug):
            raise bad_request(
                f"slug {slug!r} is not a slug: use lowercase letters, digits and '-' "
                f"(e.g. {slugs.slugify(slug)!r})"
            )
        if select_by_ref(conn, table, slug) is not None:
            raise slug_taken(slug)
        values["slug"] = slug
    if archived is not None:
        values["archived"] = now if archived else None
    return values
