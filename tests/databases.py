"""One fresh database per test, on each engine the server supports (SQLite and PostgreSQL).

PostgreSQL is found at ``BENCHRUNNER_TEST_POSTGRES`` (default: the local server, trust auth).
Every test gets its own database, created empty and dropped afterwards, so tests cannot see
each other's rows. When the server is unreachable the PostgreSQL half is skipped, except under
``CI=true``, where it fails: CI must prove both engines.
"""

from __future__ import annotations

import contextlib
import functools
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
import sqlalchemy as sa
from psycopg import sql

ENGINES = ("sqlite", "postgresql")
POSTGRES_ADMIN_URL = os.environ.get(
    "BENCHRUNNER_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres"
)


@functools.cache
def postgres_unreachable_reason() -> str | None:
    try:
        with psycopg.connect(POSTGRES_ADMIN_URL, connect_timeout=3):
            return None
    except psycopg.Error as exc:
        return f"PostgreSQL not reachable at {POSTGRES_ADMIN_URL}: {exc}".strip()


def require_postgres() -> None:
    reason = postgres_unreachable_reason()
    if reason is None:
        return
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason} (CI must run the PostgreSQL half)")
    pytest.skip(reason)


@contextlib.contextmanager
def postgres_database() -> Iterator[str]:
    """A new empty PostgreSQL database; yields its SQLAlchemy URL, drops it afterwards."""
    require_postgres()
    name = f"benchrunner_test_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield (
            sa.make_url(POSTGRES_ADMIN_URL).set(database=name).render_as_string(hide_password=False)
        )
    finally:
        with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as admin:
            admin.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


@contextlib.contextmanager
def fresh_database(engine: str, directory: Path) -> Iterator[str]:
    """A new empty database on ``engine`` ("sqlite" or "postgresql"); yields its URL."""
    if engine == "sqlite":
        yield f"sqlite:///{directory / 'benchrunner.db'}"
    elif engine == "postgresql":
        with postgres_database() as url:
            yield url
    else:
        raise ValueError(f"unknown engine {engine!r}")
