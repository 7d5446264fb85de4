"""Rows sent to PostgreSQL as one array a column and unnested into a table (the capability
``bulk_arrays``): one statement for many rows, where an ``executemany`` is one statement a row
on the server."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

ColumnType = sa.types.TypeEngine[Any] | type[sa.types.TypeEngine[Any]]


def unnested(
    columns: Sequence[tuple[str, ColumnType]],
    *,
    parameter_prefix: str = "",
    name: str | None = "given",
) -> Any:
    """The rows of ``columns`` (name, type), each column sent as the array parameter named
    ``parameter_prefix`` and the column's name, as a table called ``name`` (None: an anonymous
    one) with those columns."""
    arrays = (
        sa.bindparam(parameter_prefix + column, type_=postgresql.ARRAY(kind))
        for column, kind in columns
    )
    return (
        sa.func.unnest(*arrays)
        .table_valued(*(sa.column(column) for column, _ in columns))
        .render_derived(name=name)
    )
