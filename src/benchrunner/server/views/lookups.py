"""A project's rows named by a request's reference (UUID, slug or name), or the 404 that names
what was asked for: what the API's routes and the console's pages both look up."""

from __future__ import annotations

import uuid
from typing import Any, overload

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.server.http.errors import not_found
from benchrunner.server.store import dimensions, reports, thresholds


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


def threshold_in_project(conn: Connection, project_id: int, ref: str) -> Any:
    """The project's threshold with this UUID (its row as ``threshold_by_id`` reads it), or
    404."""
    found = thresholds.threshold_get(conn, project_id, ref)
    if found is None:
        raise not_found("threshold", ref)
    return found
