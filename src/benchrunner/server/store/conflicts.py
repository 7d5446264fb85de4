"""Writes that may meet a row another transaction has just written.

Check-then-insert loses races on PostgreSQL with several replicas: both transactions see no
row, and the second insert violates the unique constraint (a 500). ``INSERT … ON CONFLICT DO
NOTHING`` instead waits for the first transaction and then skips the row, so the caller reads
the winner's row. The two engines spell it with their own dialect's ``insert``, which their
``Capabilities`` carry.
"""

from __future__ import annotations

import functools
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.core import slugs
from benchrunner.server.store import capabilities
from benchrunner.server.store.capabilities import Capabilities

MAX_SLUG_ATTEMPTS = 16


class SlugUnavailable(Exception):
    """Every suffixed slug tried was taken too (practically unreachable with random suffixes)."""


@functools.cache
def _insert_or_skip(
    table: sa.Table, engine: Capabilities, conflict_on: tuple[str, ...]
) -> sa.Insert:
    return engine.insert(table).on_conflict_do_nothing(index_elements=list(conflict_on) or None)


@functools.cache
def _insert_or_replace_where(
    table: sa.Table,
    engine: Capabilities,
    conflict_on: tuple[str, ...],
    replace: tuple[str, ...],
    where: sa.ColumnElement[bool],
) -> sa.Insert:
    statement = engine.insert(table)
    return statement.on_conflict_do_update(
        index_elements=list(conflict_on),
        set_={name: statement.excluded[name] for name in replace},
        where=where,
    )


def insert_or_skip(
    conn: Connection, table: sa.Table, conflict_on: tuple[str, ...] = ()
) -> sa.Insert:
    """``INSERT INTO table … ON CONFLICT [(conflict_on)] DO NOTHING`` for this connection's
    engine. Without ``conflict_on`` a conflict on any unique constraint skips the row. A skipped
    row returns no RETURNING row: ask for one to learn whether the row went in (``rowcount``
    does not tell on PostgreSQL)."""
    return _insert_or_skip(table, capabilities.of(conn), conflict_on)


def insert_or_replace_where(
    conn: Connection,
    table: sa.Table,
    conflict_on: tuple[str, ...],
    replace: tuple[str, ...],
    where: sa.ColumnElement[bool],
) -> sa.Insert:
    """``INSERT INTO table … ON CONFLICT (conflict_on) DO UPDATE SET`` each column of
    ``replace`` to the new row's value ``WHERE where`` (a condition on the existing row, e.g.
    that it expired): a conflicting row for which ``where`` holds is replaced, any other
    conflicting row is kept and the new one skipped. Only a row inserted or replaced returns a
    RETURNING row. On PostgreSQL a conflicting row that another transaction is writing is
    waited for, then judged as that transaction left it. ``where`` must be a module constant:
    the statement is cached by it."""
    return _insert_or_replace_where(table, capabilities.of(conn), conflict_on, replace, where)


def _slug_held(conn: Connection, table: sa.Table, slug: str) -> bool:
    return conn.execute(sa.select(table.c.id).where(table.c.slug == slug)).first() is not None


def insert_with_slug(
    conn: Connection,
    table: sa.Table,
    values: dict[str, Any],
    wanted: str,
    *,
    exact: bool = False,
) -> int | None:
    """Insert a row of ``table`` (which has ``id`` and a unique ``slug``) and return its id.

    Its slug is ``wanted`` slugified, or, when that is taken (already, or by a create racing
    this one), the same with a short random suffix (docs/decisions/bencher-wire.md) — whoever holds
    the slug, so the answer tells nothing about the row that holds it. With ``exact``, a taken slug
    gives None instead. None also when another unique column (a user's email) conflicts.
    """
    base = slugs.slugify(wanted)
    slug = base
    statement = insert_or_skip(conn, table).returning(table.c.id)
    for _ in range(MAX_SLUG_ATTEMPTS):
        row_id = conn.execute(statement, {**values, "slug": slug}).scalar()
        if row_id is not None:
            return int(row_id)
        if exact or not _slug_held(conn, table, slug):
            return None
        slug = slugs.with_suffix(base)
    raise SlugUnavailable(f"no free slug for {base!r} after {MAX_SLUG_ATTEMPTS} attempts")


def update_unless_taken(conn: Connection, statement: sa.Update) -> bool:
    """Run an UPDATE that may violate a unique constraint (a new slug another rename or
    create took meanwhile); False, with nothing changed, when it does. The savepoint keeps
    the outer transaction usable after the violation on both engines."""
    try:
        with conn.begin_nested():
            conn.execute(statement)
    except sa.exc.IntegrityError:
        return False
    return True
