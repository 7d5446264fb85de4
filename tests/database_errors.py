"""Real errors of each database driver, raised by the driver itself, for tests that inject a
database failure: the database out of reach for a moment (``store.unavailable``), or a
statement it refuses, wrapped as SQLAlchemy wraps them (its message holds the statement and
its parameters, which a log must not show)."""

from __future__ import annotations

import socket
import sqlite3
import tempfile
from pathlib import Path
from typing import TypeVar

import psycopg
import sqlalchemy as sa
from psycopg import sql

SECRET = "s3cret-parameter"
"""A parameter of the failed statement: never in a log line about it."""

Refused = TypeVar("Refused", bound=sqlite3.Error)


def sqlite_busy() -> sqlite3.OperationalError:
    """SQLite's own ``database is locked``: a write begun while another connection writes."""
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "busy.db"
        holder = sqlite3.connect(path, isolation_level=None)
        other = sqlite3.connect(path, timeout=0, isolation_level=None)
        try:
            holder.execute("BEGIN IMMEDIATE")
            try:
                other.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                return exc
            raise AssertionError("the second writer was not refused")
        finally:
            other.close()
            holder.close()


def _sqlite_refused(refusal: type[Refused], *statements: str) -> Refused:
    """The error SQLite raises of ``refusal`` when ``statements`` run in turn."""
    conn = sqlite3.connect(":memory:")
    try:
        for statement in statements:
            conn.execute(statement)
    except refusal as exc:
        return exc
    finally:
        conn.close()
    raise AssertionError(f"SQLite refused none of {statements}")


def sqlite_no_such_table() -> sqlite3.OperationalError:
    """SQLite's own error for a statement that is wrong: it recurs."""
    return _sqlite_refused(sqlite3.OperationalError, "SELECT * FROM missing")


def sqlite_integrity() -> sqlite3.IntegrityError:
    return _sqlite_refused(
        sqlite3.IntegrityError,
        "CREATE TABLE t (id INTEGER PRIMARY KEY)",
        "INSERT INTO t VALUES (1)",
        "INSERT INTO t VALUES (1)",
    )


def postgresql_refused() -> psycopg.OperationalError:
    """psycopg's own error for a server that refuses the connection (as one restarting)."""
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = int(probe.getsockname()[1])
    probe.close()  # nothing listens on it now
    try:
        psycopg.connect(f"host=127.0.0.1 port={port} connect_timeout=5").close()
    except psycopg.OperationalError as exc:
        return exc
    raise AssertionError("the connection was not refused")


def wrapped(orig: Exception) -> sa.exc.DBAPIError:
    """``orig`` as SQLAlchemy raises it from a statement with a secret parameter."""
    base = psycopg.Error if isinstance(orig, psycopg.Error) else sqlite3.Error
    found = sa.exc.DBAPIError.instance(
        "UPDATE report SET token = :token", {"token": SECRET}, orig, base
    )
    assert isinstance(found, sa.exc.DBAPIError)
    return found


def sqlite_undecodable() -> sqlite3.OperationalError:
    """An error of Python's sqlite3 module itself, with no SQLite error code: a text column
    that is not UTF-8. It recurs."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("SELECT CAST(x'ff' AS TEXT)").fetchone()
    except sqlite3.OperationalError as exc:
        return exc
    finally:
        conn.close()
    raise AssertionError("the text was decoded")


def postgresql_raised(
    admin_url: str,
    statement: str,
    params: tuple[object, ...] = (),
    *,
    timeout_ms: int | None = None,
) -> Exception:
    """The psycopg error that ``statement`` raises on the PostgreSQL of ``admin_url``; with
    ``timeout_ms``, after a statement timeout that long is set (a statement that should fail
    otherwise gets none: on a loaded machine even its parse may outlast a short one)."""
    with psycopg.connect(admin_url, autocommit=True) as conn:
        if timeout_ms is not None:
            conn.execute(sql.SQL("SET statement_timeout = {}").format(timeout_ms))
        try:
            conn.execute(statement.encode(), params)  # bytes: a test's own fixed statement
        except psycopg.Error as exc:
            return exc
    raise AssertionError(f"{statement!r} was not refused")
