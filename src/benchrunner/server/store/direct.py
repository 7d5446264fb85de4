"""Statements for the hot paths, compiled once per dialect and run straight on the DBAPI
cursor of the unit's connection, inside its transaction.

``Connection.execute`` re-derives per call what never changes for a cached statement — the
compiled form's parameter handling, result metadata, events, a ``Row`` per row — and on
SQLite, where the statement itself is cheap, that per-call work can outweigh it. A ``Direct``
statement keeps the compiled SQL, the order of its parameters, and the type conversions its
parameters and columns need (SQLAlchemy's own processors, so values look exactly as
``Connection.execute`` would give them), and does only the conversions per call.

Only for statements whose shape is fixed: constant ``IN`` lists are rendered once; a runtime
list (an expanding parameter) needs ``Connection.execute``.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.sql import ClauseElement
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.types import TypeEngine

Processor = Callable[[Any], Any]


@dataclass
class _Plan:
    dialect: Dialect
    sql: str
    positional: tuple[str, ...] | None
    """The parameter names in the order of the placeholders, for a positional paramstyle."""
    defaults: Mapping[str, Any]
    binds: tuple[tuple[str, Processor], ...]
    row: type[tuple[Any, ...]] | None
    column_types: tuple[TypeEngine[Any], ...]
    results: tuple[tuple[int, Processor], ...] | None = None
    """Conversions of the result columns; some depend on the type the driver reports for the
    column, so they are made from the first execution's cursor description."""

    def result_processors(self, description: Sequence[Any]) -> tuple[tuple[int, Processor], ...]:
        if self.results is None:
            results = []
            for index, (column_type, described) in enumerate(
                zip(self.column_types, description, strict=True)
            ):
                impl = column_type.dialect_impl(self.dialect)
                processor = impl.result_processor(self.dialect, described[1])
                if processor is not None:
                    results.append((index, processor))
            self.results = tuple(results)
        return self.results


def _row_type(names: tuple[str, ...]) -> type[tuple[Any, ...]]:
    """A tuple whose fields are also attributes by column name, as ``Row`` has."""
    return collections.namedtuple("Row", names)


def _plan(statement: ClauseElement, dialect: Dialect) -> _Plan:
    compiled = statement.compile(dialect=dialect)
    assert isinstance(compiled, SQLCompiler)
    required = {name for name, bind in compiled.binds.items() if bind.required}
    if any(compiled.binds[name].expanding for name in required):
        raise ValueError("a runtime IN list needs Connection.execute, not a Direct statement")
    # Constant IN lists are expanded once, here; every other parameter is given per call.
    expanded = compiled.construct_expanded_state({name: None for name in required})
    processors: dict[str, Processor] = dict(expanded.processors)
    for name, bind in compiled.binds.items():
        processor = bind.type.dialect_impl(dialect).bind_processor(dialect)
        if processor is not None and name in expanded.parameters:
            processors[name] = processor
    # A SELECT's columns, or the RETURNING columns of an INSERT, UPDATE or DELETE (none
    # without RETURNING).
    columns = getattr(statement, "exported_columns", None)
    row = _row_type(tuple(columns.keys())) if columns else None
    return _Plan(
        dialect=dialect,
        sql=expanded.statement,
        positional=tuple(expanded.positiontup) if expanded.positiontup is not None else None,
        defaults={k: v for k, v in expanded.parameters.items() if k not in required},
        binds=tuple(processors.items()),
        row=row,
        column_types=tuple(column.type for column in columns) if columns else (),
    )


def insert_values(table: sa.Table, columns: Iterable[str]) -> sa.Insert:
    """``INSERT INTO table (columns) VALUES (:column, ...)``, each parameter typed as its
    column (a Direct statement names its columns up front; ``execute`` infers them)."""
    return table.insert().values(
        {name: sa.bindparam(name, type_=table.c[name].type) for name in columns}
    )


class Direct:
    """A Core statement run without ``Connection.execute``; see the module's docstring."""

    def __init__(self, statement: ClauseElement) -> None:
        self.statement = statement
        self._plans: dict[str, _Plan] = {}

    def _plan_for(self, conn: Connection) -> _Plan:
        dialect = conn.dialect
        plan = self._plans.get(dialect.name)
        if plan is None:
            plan = self._plans[dialect.name] = _plan(self.statement, dialect)
        return plan

    def _execute(self, conn: Connection, params: Mapping[str, Any]) -> tuple[_Plan, Any]:
        plan = self._plan_for(conn)
        values = {**plan.defaults, **params}
        for name, processor in plan.binds:
            values[name] = processor(values[name])
        cursor = conn.connection.cursor()
        if plan.positional is not None:
            cursor.execute(plan.sql, tuple(values[name] for name in plan.positional))
        else:
            cursor.execute(plan.sql, values)
        return plan, cursor

    def all(self, conn: Connection, params: Mapping[str, Any] | None = None) -> list[Any]:
        """Every row, with attribute access by column name (as ``Row`` has)."""
        plan, cursor = self._execute(conn, params or {})
        try:
            raws = cursor.fetchall()
            if not raws:
                return []
            processors = self._processors(plan, cursor)
            return [self._row(plan, processors, raw) for raw in raws]
        finally:
            cursor.close()

    def first(self, conn: Connection, params: Mapping[str, Any] | None = None) -> Any | None:
        plan, cursor = self._execute(conn, params or {})
        try:
            raw = cursor.fetchone()
            return None if raw is None else self._row(plan, self._processors(plan, cursor), raw)
        finally:
            cursor.close()

    def scalar(self, conn: Connection, params: Mapping[str, Any] | None = None) -> Any | None:
        row = self.first(conn, params)
        return None if row is None else row[0]

    def run(self, conn: Connection, params: Mapping[str, Any] | None = None) -> int:
        """A statement without rows; returns the number of rows it changed."""
        _, cursor = self._execute(conn, params or {})
        try:
            return int(cursor.rowcount)
        finally:
            cursor.close()

    @staticmethod
    def _processors(plan: _Plan, cursor: Any) -> tuple[tuple[int, Processor], ...]:
        """The result conversions; the cursor's description is read only the first time
        (psycopg builds it anew, a column object per column, at each access)."""
        if plan.results is not None:
            return plan.results
        return plan.result_processors(cursor.description)

    @staticmethod
    def _row(plan: _Plan, processors: tuple[tuple[int, Processor], ...], raw: Sequence[Any]) -> Any:
        assert plan.row is not None, "this statement returns no rows"
        if processors:
            values = list(raw)
            for index, processor in processors:
                values[index] = processor(values[index])
            return plan.row(*values)
        return plan.row(*raw)
