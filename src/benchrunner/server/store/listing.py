"""A list route's read: a statement narrowed by the filters given, one page of it in order,
and how many rows it holds in all (the ``X-Total-Count`` header)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection


def where_given(
    statement: sa.Select[Any], filters: Iterable[tuple[sa.ColumnElement[Any], object | None]]
) -> sa.Select[Any]:
    """``statement`` with ``column = wanted`` for each filter whose ``wanted`` is not None."""
    for column, wanted in filters:
        if wanted is not None:
            statement = statement.where(column == wanted)
    return statement


def page_of(
    conn: Connection,
    statement: sa.Select[Any],
    order: sa.ColumnElement[Any],
    tiebreak: sa.ColumnElement[Any],
    *,
    ascending: bool,
    limit: int,
    offset: int,
) -> tuple[list[Any], int]:
    """One page of the statement's rows by ``order`` (then ``tiebreak``, ascending, so pages
    never overlap), and the count of all its rows."""
    total = conn.execute(sa.select(sa.func.count()).select_from(statement.subquery())).scalar_one()
    ordered = statement.order_by(order.asc() if ascending else order.desc(), tiebreak)
    rows = conn.execute(ordered.limit(limit).offset(offset)).all()
    return list(rows), int(total)
