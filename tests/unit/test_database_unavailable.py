"""Which database errors leave work for a later try (``store.unavailable``): the database out
of reach or busy, as each driver raises it, wrapped by SQLAlchemy or not; never a statement it
refuses nor any other error, which would recur on every try. Their description never shows the
failed statement's parameters."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import sqlalchemy as sa

from benchrunner.server.store.unavailable import database_unavailable, described
from tests.database_errors import (
    SECRET,
    postgresql_refused,
    sqlite_busy,
    sqlite_integrity,
    sqlite_no_such_table,
    wrapped,
)


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
    ("SQLite: no such table", lambda: wrapped(sqlite_no_such_table()), False),
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
