"""Whether an error says the database was out of reach for a moment, rather than that the work
is wrong: work it cut short is left for a later try, which it may not meet."""

from __future__ import annotations

import sqlite3

import psycopg
import sqlalchemy as sa

_SQLITE_PASSING = frozenset(
    {
        sqlite3.SQLITE_BUSY,
        sqlite3.SQLITE_LOCKED,
        sqlite3.SQLITE_IOERR,
        sqlite3.SQLITE_CANTOPEN,
        sqlite3.SQLITE_FULL,
        sqlite3.SQLITE_PROTOCOL,
    }
)
"""SQLite's primary result codes of a database busy, locked or out of reach: not those of a
statement that is wrong (``no such table``: ``SQLITE_ERROR``), which recur."""


_POSTGRESQL_PASSING = frozenset({"40001", "40P01", "53300", "55P03", "57P01", "57P02", "57P03"})
"""PostgreSQL's SQLSTATEs of a database out of reach for a moment (besides class 08, the
connection's): a serialization failure or deadlock, too many connections, a lock not available,
a server shut down or starting. Not its other operational errors (a program limit exceeded,
a statement cancelled by its timeout, an object in the wrong state), which recur."""


def database_unavailable(exc: BaseException) -> bool:
    """Whether ``exc`` says the database could not do the work now, so that a later try may
    succeed and the work is left for it: a connection lost, refused or invalidated, a pool
    exhausted, one of PostgreSQL's SQLSTATEs above (``_POSTGRESQL_PASSING``, class 08), SQLite
    busy, locked or unable to read or write its file. Any other error (a bug, a statement or
    data the database refuses, a limit exceeded, an error of a driver's own without a
    database's code) recurs on every try. Errors come wrapped by SQLAlchemy or, from
    statements run on the driver's cursor (``store.direct``), straight from the driver."""
    if isinstance(exc, sa.exc.DBAPIError):
        if exc.connection_invalidated:
            return True
        if not isinstance(exc.orig, sqlite3.Error | psycopg.Error):
            return isinstance(exc, sa.exc.OperationalError | sa.exc.InterfaceError)
        exc = exc.orig
    if isinstance(exc, sa.exc.DisconnectionError | sa.exc.TimeoutError):
        return True
    if isinstance(exc, psycopg.Error):
        state = exc.sqlstate
        if state is None:  # psycopg's own: a connection attempt failed, or another error
            return exc.pgconn is not None and exc.pgconn.status == psycopg.pq.ConnStatus.BAD
        return state.startswith("08") or state in _POSTGRESQL_PASSING
    code = getattr(exc, "sqlite_errorcode", None)  # None: not raised by SQLite itself
    return isinstance(exc, sqlite3.Error) and code is not None and code & 0xFF in _SQLITE_PASSING


def failure_name(exc: BaseException) -> str:
    """``exc`` named for a reader who may not see its data (a job's event): its type and,
    for a database's error, its SQLSTATE or SQLite error name, never its message (a driver's
    may quote a value)."""
    if isinstance(exc, sa.exc.DBAPIError) and exc.orig is not None:
        exc = exc.orig
    code = getattr(exc, "sqlstate", None) or getattr(exc, "sqlite_errorname", None)
    return f"{type(exc).__name__} ({code})" if code else type(exc).__name__


def described(exc: BaseException, limit: int = 200) -> str:
    """``exc`` in a short line for a log or an event: its type and the first line of its
    message, the driver's for a wrapped database error (SQLAlchemy's own adds the statement and
    its parameters, which may hold what must not be logged)."""
    if isinstance(exc, sa.exc.DBAPIError) and exc.orig is not None:
        exc = exc.orig
    first = str(exc).strip().split("\n", 1)[0]
    line = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
    return line if len(line) <= limit else line[: limit - 1] + "…"
