"""A project's branches, testbeds, benchmarks and measures: the names a report's metrics are
filed under. Each is found by UUID, slug or name, in that order (docs/decisions/bencher-wire.md)."""

from __future__ import annotations

import functools
import uuid
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.server.store.direct import Direct
from benchrunner.server.store.listing import page_of, where_given
from benchrunner.server.store.tables import benchmark


@functools.cache
def _by(table: sa.Table, column: str) -> Direct:
    by = sa.select(table).where(
        table.c.project_id == sa.bindparam("project_id"), table.c[column] == sa.bindparam("ref")
    )
    return Direct(by.order_by(table.c.id).limit(1))


def dimension_get(conn: Connection, table: sa.Table, project_id: int, ref: str) -> Any | None:
    """The project's row of ``table`` named by ``ref``: a UUID, else a slug (the oldest row
    with it), else a name."""
    try:
        attempts: list[tuple[str, object]] = [("uuid", uuid.UUID(ref))]
    except ValueError:
        attempts = []
    attempts += [("slug", ref), ("name", ref)]
    for column, value in attempts:
        found = _by(table, column).first(conn, {"project_id": project_id, "ref": value})
        if found is not None:
            return found
    return None


def dimension_list(
    conn: Connection,
    table: sa.Table,
    project_id: int,
    *,
    name: str | None,
    ascending: bool,
    limit: int,
    offset: int,
) -> tuple[list[Any], int]:
    """One page of the project's rows, by name; ``name`` keeps only that exact name."""
    statement = where_given(
        sa.select(table).where(table.c.project_id == project_id), ((table.c.name, name),)
    )
    return page_of(
        conn, statement, table.c.name, table.c.id, ascending=ascending, limit=limit, offset=offset
    )


_SET_IGNORED = (
    benchmark.update()
    .where(benchmark.c.id == sa.bindparam("benchmark_id"))
    .values(ignored=sa.bindparam("ignored"))
)


def benchmark_set_ignored(conn: Connection, benchmark_id: int, ignored: bool) -> None:
    conn.execute(_SET_IGNORED, {"benchmark_id": benchmark_id, "ignored": ignored})
