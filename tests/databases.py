"""One fresh database per test, on each engine the server supports (SQLite and PostgreSQL).

PostgreSQL is found at ``BENCHRUNNER_TEST_POSTGRES`` (default: the local server, trust auth).
Every test gets its own database, created empty and dropped afterwards, so tests cannot see
each other's rows. A test or a server that needs the whole schema gets it from
``with_schema``: a copy of a database migrated once per test process, instead of running every
migration again (about two seconds each time, paid by hundreds of tests).

When the server is unreachable the PostgreSQL half is skipped, except under
``CI=true``, where it fails: CI must prove both engines.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import shutil
import sqlite3
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
import sqlalchemy as sa
from psycopg import sql

from benchrunner.server.store.engine import make_engine
from benchrunner.server.store.migrate import upgrade

ENGINES = ("sqlite", "postgresql")
POSTGRES_ADMIN_URL = os.environ.get(
    "BENCHRUNNER_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres"
)
DROP = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")


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
            admin.execute(DROP.format(sql.Identifier(name)))


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


def with_schema(url: str) -> None:
    """Give the database at ``url`` every migration, if it has none yet (a new, empty one): as a
    copy of this process's migrated template. A database that has a schema is left as it is."""
    parsed = sa.make_url(url)
    if parsed.get_backend_name() == "sqlite":
        target = Path(str(parsed.database))
        if target.exists() and target.stat().st_size > 0:
            return
        with (
            contextlib.closing(sqlite3.connect(_sqlite_template())) as source,
            contextlib.closing(sqlite3.connect(target)) as copy,
        ):
            source.backup(copy)
        return
    name = str(parsed.database)
    if _has_schema(url):
        return
    with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as admin:
        admin.execute(DROP.format(sql.Identifier(name)))
        _create_from(admin, name, _postgres_template())


def _has_schema(url: str) -> bool:
    conninfo = sa.make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(conninfo) as conn:
        row = conn.execute("SELECT to_regclass('alembic_version') IS NOT NULL").fetchone()
    return bool(row and row[0])


def _create_from(admin: psycopg.Connection[tuple[object, ...]], name: str, template: str) -> None:
    statement = sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
        sql.Identifier(name), sql.Identifier(template)
    )
    deadline = time.monotonic() + 30
    while True:
        try:
            admin.execute(statement)
            return
        except psycopg.errors.ObjectInUse:
            # The template's last connection is still closing on the server's side.
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


@functools.cache
def _sqlite_template() -> Path:
    directory = Path(os.environ.get("TMPDIR", "/tmp")) / f"schema-template-{uuid.uuid4().hex[:8]}"
    directory.mkdir(parents=True)
    path = directory / "template.db"
    engine = make_engine(f"sqlite:///{path}")
    try:
        upgrade(engine)
    finally:
        engine.dispose()
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    return path


@functools.cache
def _postgres_template() -> str:
    require_postgres()
    name = f"benchrunner_test_template_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    atexit.register(_drop_postgres, name)
    url = sa.make_url(POSTGRES_ADMIN_URL).set(database=name).render_as_string(hide_password=False)
    engine = make_engine(url)
    try:
        upgrade(engine)
    finally:
        engine.dispose()
    return name


def _drop_postgres(name: str) -> None:
    with (
        contextlib.suppress(psycopg.Error),
        psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as admin,
    ):
        admin.execute(DROP.format(sql.Identifier(name)))
