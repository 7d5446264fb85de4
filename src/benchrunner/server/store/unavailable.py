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


def database_unavailable(exc: BaseException) -> bool:
    """Whether ``exc`` says the database could not do the work now: a connection lost, refused
    or invalidated, a pool exhausted, PostgreSQL's operational errors (a server shut down, a
    serialization failure or deadlock, a statement cancelled, resources short), SQLite busy,
    locked or unable to read or write its file. A later try may succeed, so the work is left
    to be retried. Any other error (a bug, a statement or data the database refuses) recurs on
    every try. Errors come wrapped by SQLAlchemy or, from statements run on the driver's
    cursor (``store.direct``), straight from the driver."""
    if isinstance(exc, sa.exc.DBAPIError):
        if exc.connection_invalidated:
            return True
        orig = exc.orig
        if not isinstance(orig, sqlite3.Error | psycopg.Error):
            return isinstance(exc, sa.exc.OperationalError | sa.exc.InterfaceError)
        exc = orig
    if isinstance(exc, sa.exc.DisconnectionError | sa.exc.TimeoutError | psycopg.OperationalError):
        return True
    if isinstance(exc, sqlite3.OperationalError):
        code = getattr(exc, "sqlite_errorcode", None)  # None: not raised by SQLite itself
        return code is None or code & 0xFF in _SQLITE_PASSING
    return False


def described(exc: BaseException, limit: int = 200) -> str:
    """``exc`` in a short line for a log or an event: its type and the first line of its
    message, the driver's for a wrapped database error (SQLAlchemy's own adds the statement and
    its parameters, which may hold what must not be logged)."""
    if isinstance(exc, sa.exc.DBAPIError) and exc.orig is not None:
        exc = exc.orig
    first = str(exc).strip().split("\n", 1)[0]
    line = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
    return line if len(line) <= limit else line[: limit - 1] + "…"
