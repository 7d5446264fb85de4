"""Which database errors leave work for a later try (``store.unavailable``): the database out
of reach or busy, as each driver raises it, wrapped by SQLAlchemy or not; never a statement it
refuses nor any other error, which would recur on every try. Their description never shows the
failed statement's parameters."""

from __future__ import annotations

from collections.abc import Callable

import psycopg
import pytest
import sqlalchemy as sa

from benchrunner.server.store.direct import Direct
from benchrunner.server.store.engine import make_engine
from benchrunner.server.store.unavailable import database_unavailable, described, failure_name
from tests.database_errors import (
    SECRET,
    postgresql_raised,
    postgresql_refused,
    sqlite_busy,
    sqlite_integrity,
    sqlite_no_such_table,
    sqlite_undecodable,
    wrapped,
)
from tests.databases import POSTGRES_ADMIN_URL, require_postgres


def _invalidated() -> Exception:
    error = wrapped(sqlite_no_such_table())
    error.connection_invalidated = True
    return error


CASES: list[tuple[str, Callable[[], BaseException], bool]] = [
    ("SQLite busy", sqlite_busy, True),
    ("SQLite busy, wrapped", lambda: wrapped(sqlite_busy()), True),
    ("PostgreSQL refused", postgresql_refused, True),
    ("PostgreSQL refused, wrapped", lambda: wrapped(postgresql_refused()), True),
    ("a connection invalidated", _invalidated, True),
    ("a pool exhausted", lambda: sa.exc.TimeoutError("QueuePool limit reached"), True),
    ("a ping failed", lambda: sa.exc.DisconnectionError("idle connection failed"), True),
    (
        "a connection attempt timed out",
        lambda: wrapped(psycopg.errors.ConnectionTimeout("connection timeout expired")),
        True,
    ),
    ("SQLite: no such table", lambda: wrapped(sqlite_no_such_table()), False),
    ("sqlite3's own error, no SQLite code", sqlite_undecodable, False),
    ("sqlite3's own error, wrapped", lambda: wrapped(sqlite_undecodable()), False),
    ("a constraint broken", lambda: wrapped(sqlite_integrity()), False),
    ("a bug", lambda: OverflowError("intermediate overflow in fsum"), False),
]


@pytest.mark.parametrize(
    ("error", "unavailable"), [(m, u) for _, m, u in CASES], ids=[c[0] for c in CASES]
)
def test_which_errors_leave_the_work_for_a_later_try(
    error: Callable[[], BaseException], unavailable: bool
) -> None:
    assert database_unavailable(error()) is unavailable


def test_a_wrapped_error_is_described_by_the_driver_without_the_statement() -> None:
    error = wrapped(sqlite_busy())
    assert SECRET in str(error)
    assert described(error) == "OperationalError: database is locked"
    refused = described(wrapped(postgresql_refused()))
    assert refused.startswith("OperationalError: connection failed") and SECRET not in refused
    assert "\n" not in refused and len(refused) <= 200
    assert len(described(ValueError("x" * 500))) == 200


def _postgresql(
    statement: str, params: tuple[object, ...] = (), *, timeout_ms: int | None = None
) -> Callable[[], Exception]:
    def raised() -> Exception:
        require_postgres()
        return postgresql_raised(POSTGRES_ADMIN_URL, statement, params, timeout_ms=timeout_ms)

    return raised


def _state(sqlstate: str) -> Callable[[], Exception]:
    """psycopg's error for ``sqlstate``, as it raises one the server sent (its own class)."""
    return lambda: psycopg.errors.lookup(sqlstate)("from the server")


POSTGRESQL_CASES: list[tuple[str, Callable[[], Exception], bool]] = [
    ("57014 statement timeout", _postgresql("SELECT pg_sleep(1)", timeout_ms=1), True),
    ("54000 program limit", _postgresql("SELECT repeat('x', 1073741823)"), False),
    (
        "libpq's parameter limit, no SQLSTATE",
        _postgresql("SELECT " + ", ".join(["%s"] * 65536), (1,) * 65536),
        False,
    ),
    ("22P02 a value refused", _postgresql("SELECT %s::float8", (SECRET,)), False),
    ("54001 stack depth", _state("54001"), False),
    ("54011 too many columns", _state("54011"), False),
    ("55000 object not in state", _state("55000"), False),
    ("08P01 protocol violation", _state("08P01"), False),
    ("53100 disk full", _state("53100"), True),
    ("53200 out of memory", _state("53200"), True),
    ("58030 I/O error", _state("58030"), True),
    ("08006 connection failure", _state("08006"), True),
    ("40001 serialization failure", _state("40001"), True),
    ("40P01 deadlock", _state("40P01"), True),
    ("53300 too many connections", _state("53300"), True),
    ("55P03 lock not available", _state("55P03"), True),
    ("57P01 admin shutdown", _state("57P01"), True),
    ("57P02 crash shutdown", _state("57P02"), True),
    ("57P03 cannot connect now", _state("57P03"), True),
]


@pytest.mark.parametrize(
    ("error", "unavailable"),
    [(m, u) for _, m, u in POSTGRESQL_CASES],
    ids=[c[0] for c in POSTGRESQL_CASES],
)
def test_postgresql_errors_are_told_apart_by_their_sqlstate(
    error: Callable[[], Exception], unavailable: bool
) -> None:
    raised = error()
    assert database_unavailable(raised) is unavailable
    assert database_unavailable(wrapped(raised)) is unavailable


def test_a_direct_statement_on_a_closed_connection_reads_as_the_database_out_of_reach() -> None:
    """psycopg's ``the connection is closed`` has no SQLSTATE: ``store.direct`` says the
    connection is gone, as SQLAlchemy does for its own statements."""
    require_postgres()
    url = sa.make_url(POSTGRES_ADMIN_URL).set(drivername="postgresql+psycopg")
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            conn.connection.driver_connection.close()  # type: ignore[union-attr]
            with pytest.raises(Exception) as raised:
                Direct(sa.select(sa.literal(1).label("one"))).scalar(conn)
            assert database_unavailable(raised.value)
    finally:
        engine.dispose()


def test_a_failure_is_named_without_the_data_it_quotes() -> None:
    """A job's event names a failure by its type and SQLSTATE (or SQLite's code), never by the
    driver's message, which may quote a value of the data."""
    require_postgres()
    refused = postgresql_raised(POSTGRES_ADMIN_URL, "SELECT %s::float8", (SECRET,))
    assert SECRET in str(refused)
    assert failure_name(wrapped(refused)) == "InvalidTextRepresentation (22P02)"
    assert failure_name(wrapped(sqlite_busy())) == "OperationalError (SQLITE_BUSY)"
    assert failure_name(OverflowError("intermediate overflow in fsum")) == "OverflowError"


def test_the_server_engines_errors_never_show_a_statements_parameters(database_url: str) -> None:
    """A failed statement's error reaches the server's log: it names the statement, never its
    parameters, which hold the data."""
    engine = make_engine(database_url)
    try:
        with engine.connect() as conn, pytest.raises(sa.exc.DBAPIError) as raised:
            conn.execute(sa.text("SELECT * FROM no_such_table WHERE x = :given"), {"given": SECRET})
    finally:
        engine.dispose()
    assert "no_such_table" in str(raised.value)
    assert SECRET not in str(raised.value)
