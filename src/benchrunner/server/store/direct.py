"""Statements for the hot paths, compiled once per dialect and run straight on the DBAPI
cursor of the unit's connection, inside its transaction.

``Connection.execute`` re-derives per call what never changes for a cached statement — the
compiled form's parameter handling, result metadata, events, a ``Row`` per row — and on
SQLite, where the statement itself is cheap, that per-call work can outweigh it. A ``Direct``
statement keeps the compiled SQL, the order of its parameters, and the type conversions its
parameters and columns need (SQLAlchemy's own processors, so values look exactly as
``Connection.execute`` would give them), and does only the conversions per call.

Constant ``IN`` lists are rendered once. A runtime list (an expanding parameter, given as a
list, which SQLAlchemy renders only in ``IN``) is rendered once per bucket of lengths: padded
with its last element up to a power of two (``padded_length``), since a repeat in ``IN``
changes nothing and lists whose length changes from call to call (the jobs in flight) would
otherwise be planned again at each call. A statement keeps the plans of up to ``MAX_PLANS``
buckets, and starts again past them.

On psycopg the SQL is kept as psycopg would send it, with ``$1``-style placeholders, and run on
a raw cursor (``psycopg.RawCursor``) with its parameters in order: psycopg's own conversion of
named placeholders parses the text again at each call past 4,096 characters or 50 parameters
(its cache's limits, which a claim's or a submission's statement passes), and below them
hashes the text and reorders the parameters at each call. A statement without runtime lists
is prepared at its first run on a connection, where psycopg would wait for its fifth: each of
the first four would be parsed and planned again, and a server that runs a job now and then
spreads them over hours. Preparing costs a round trip of its own, once per statement and
connection either way (and again after a rollback on that connection, which drops what it
prepared).
"""

from __future__ import annotations

import collections
import contextlib
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.sql import ClauseElement
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.types import TypeEngine

Processor = Callable[[Any], Any]

MAX_PLANS = 32
"""Plans kept per statement and dialect for the lengths of its runtime lists."""

PADDED_UP_TO = 4096
"""The longest list padded; a longer one is planned at its own length (at most doubling a
list keeps it far under SQLite's 32,766 parameters)."""


def padded_length(length: int) -> int:
    """The length a runtime list of ``length`` is planned and sent at."""
    if length <= 1 or length > PADDED_UP_TO:
        return length
    return 1 << (length - 1).bit_length()


_NAMED_PLACEHOLDER = re.compile(r"%%|%\(([^)]+)\)s")
"""What psycopg reads in a ``pyformat`` statement: an escaped ``%``, or a named placeholder."""


def _numbered(sql: str) -> tuple[bytes, tuple[str, ...]]:
    """A ``pyformat`` statement (``%(name)s``, ``%%``) as PostgreSQL reads it (``$1``, ``%``),
    and the parameter names in the order of their numbers (a name used twice is one
    number)."""
    names: dict[str, int] = {}

    def number(match: re.Match[str]) -> str:
        name = match.group(1)
        if name is None:
            return "%"
        return f"${names.setdefault(name, len(names) + 1)}"

    return _NAMED_PLACEHOLDER.sub(number, sql).encode(), tuple(names)


@dataclass
class _Plan:
    dialect: Dialect
    sql: str | bytes
    positional: tuple[str, ...] | None
    """The parameter names in the order of the placeholders, for a positional paramstyle
    (psycopg's too, run raw: ``raw``)."""
    defaults: Mapping[str, Any]
    binds: tuple[tuple[str, Processor], ...]
    row: type[tuple[Any, ...]] | None
    column_types: tuple[TypeEngine[Any], ...]
    raw: bool = False
    """Run on psycopg's raw cursor, ``sql`` numbered (``_numbered``)."""
    on_psycopg: bool = False
    """On psycopg, whose errors on a connection gone are wrapped (``_connection_gone``)."""
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


@contextlib.contextmanager
def _connection_gone(conn: Connection) -> Iterator[None]:
    """A psycopg error raised on a connection closed or broken wrapped as SQLAlchemy wraps it
    (``connection_invalidated``): the driver's own error (``the connection is closed``) has no
    SQLSTATE and does not say so, and the database out of reach must read as such
    (``unavailable.database_unavailable``)."""
    try:
        yield
    except psycopg.Error as exc:
        driver = conn.connection.driver_connection
        if isinstance(driver, psycopg.Connection) and (driver.closed or driver.broken):
            raise sa.exc.DBAPIError.instance(
                None, None, exc, psycopg.Error, connection_invalidated=True
            ) from exc
        raise


_UNGUARDED = contextlib.nullcontext()
"""What a statement on another driver than psycopg runs in: nothing to wrap, and no context
manager (a generator) made twice per statement."""


def _guarded(conn: Connection, plan: _Plan) -> contextlib.AbstractContextManager[None]:
    return _connection_gone(conn) if plan.on_psycopg else _UNGUARDED


def _cursor(conn: Connection, plan: _Plan) -> Any:
    """A DBAPI cursor of ``conn`` for ``plan``: psycopg's raw one for a ``raw`` plan."""
    if plan.raw:
        connection: Any = conn.connection.dbapi_connection
        return psycopg.RawCursor(connection)
    with _guarded(conn, plan):  # psycopg's ``cursor()`` refuses a closed connection
        return conn.connection.cursor()


def _row_type(names: tuple[str, ...]) -> type[tuple[Any, ...]]:
    """A tuple whose fields are also attributes by column name, as ``Row`` has."""
    return collections.namedtuple("Row", names)


def _expanding(statement: ClauseElement, dialect: Dialect) -> tuple[str, ...]:
    """The names of the statement's runtime lists."""
    compiled = statement.compile(dialect=dialect)
    assert isinstance(compiled, SQLCompiler)
    return tuple(name for name, bind in compiled.binds.items() if bind.required and bind.expanding)


def _plan(statement: ClauseElement, dialect: Dialect, lengths: Mapping[str, int]) -> _Plan:
    """The plan for runtime lists of ``lengths`` (by name); SQLAlchemy names a list's
    elements ``name_1``, ``name_2`` ... (``Direct._values`` gives them so)."""
    compiled = statement.compile(dialect=dialect)
    assert isinstance(compiled, SQLCompiler)
    required = {name for name, bind in compiled.binds.items() if bind.required}
    # Constant IN lists are expanded once, here, and runtime lists to their lengths; every
    # other parameter is given per call.
    expanded = compiled.construct_expanded_state(
        {name: [None] * lengths[name] if name in lengths else None for name in required}
    )
    processors: dict[str, Processor] = dict(expanded.processors)
    for name, bind in compiled.binds.items():
        processor = bind.type.dialect_impl(dialect).bind_processor(dialect)
        if processor is not None and name in expanded.parameters:
            processors[name] = processor
    # A SELECT's columns, or the RETURNING columns of an INSERT, UPDATE or DELETE (none
    # without RETURNING).
    columns = getattr(statement, "exported_columns", None)
    row = _row_type(tuple(columns.keys())) if columns else None
    sql: str | bytes = expanded.statement
    positional = tuple(expanded.positiontup) if expanded.positiontup is not None else None
    on_psycopg = dialect.driver == "psycopg"
    raw = on_psycopg and dialect.paramstyle == "pyformat"
    if raw:
        sql, positional = _numbered(expanded.statement)
        # A name SQLAlchemy had to escape in the text would not be found in the values.
        raw = set(positional) <= set(expanded.parameters)
        if not raw:
            sql, positional = expanded.statement, None
    return _Plan(
        dialect=dialect,
        sql=sql,
        positional=positional,
        raw=raw,
        on_psycopg=on_psycopg,
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
        self._lists: dict[str, tuple[str, ...]] = {}
        """Per dialect, the names of the statement's runtime lists."""
        self._plans: dict[tuple[str, tuple[int, ...]], _Plan] = {}
        """By dialect and the lengths of the runtime lists."""
        self._listless: dict[str, _Plan] = {}
        """By dialect, the one plan of a statement without runtime lists."""

    def _plan_for(self, conn: Connection, params: Mapping[str, Any]) -> tuple[_Plan, Any]:
        """The plan for ``params``, and the names of its runtime lists."""
        dialect = conn.dialect
        listless = self._listless.get(dialect.name)
        if listless is not None:
            return listless, ()
        lists = self._lists.get(dialect.name)
        if lists is None:
            lists = self._lists[dialect.name] = _expanding(self.statement, dialect)
        lengths = tuple(padded_length(len(params[name])) for name in lists)
        key = (dialect.name, lengths)
        plan = self._plans.get(key)
        if plan is None:
            if len(self._plans) >= MAX_PLANS:
                self._plans.clear()
            plan = self._plans[key] = _plan(
                self.statement, dialect, dict(zip(lists, lengths, strict=True))
            )
            if not lists:
                self._listless[dialect.name] = plan
        return plan, lists

    def _values(
        self, plan: _Plan, lists: tuple[str, ...], params: Mapping[str, Any]
    ) -> dict[str, Any]:
        values = {**plan.defaults, **params} if plan.defaults else dict(params)
        for name in lists:
            given = values.pop(name)
            padding = given[-1:] * (padded_length(len(given)) - len(given))
            for index, value in enumerate([*given, *padding], 1):
                values[f"{name}_{index}"] = value
        for name, processor in plan.binds:
            values[name] = processor(values[name])
        return values

    def _arguments(self, plan: _Plan, values: dict[str, Any]) -> Any:
        if plan.positional is not None:
            return tuple(values[name] for name in plan.positional)
        return values

    def _execute(self, conn: Connection, params: Mapping[str, Any]) -> tuple[_Plan, Any]:
        plan, lists = self._plan_for(conn, params)
        arguments = self._arguments(plan, self._values(plan, lists, params))
        cursor = _cursor(conn, plan)
        with _guarded(conn, plan):
            if plan.raw:
                # a runtime list's rarer lengths keep psycopg's own threshold
                cursor.execute(plan.sql, arguments, prepare=True if not lists else None)
            else:
                cursor.execute(plan.sql, arguments)
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

    def run_many(self, conn: Connection, rows: Sequence[Mapping[str, Any]]) -> None:
        """The statement once per row of parameters (an ``INSERT`` of several rows), in one
        call to the driver; a statement with runtime lists cannot be run so."""
        if not rows:
            return
        plan, lists = self._plan_for(conn, rows[0])
        if lists:
            raise ValueError("run_many takes no runtime list")
        arguments = [self._arguments(plan, self._values(plan, (), row)) for row in rows]
        cursor = _cursor(conn, plan)
        try:
            with _guarded(conn, plan):
                if len(arguments) == 1:
                    # psycopg runs ``executemany`` in a pipeline, whose set-up and sync cost more
                    # than the one row's statement.
                    cursor.execute(plan.sql, arguments[0])
                else:
                    cursor.executemany(plan.sql, arguments)
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
