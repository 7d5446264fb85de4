"""An acknowledged result survives a power cut: SQLite's WAL is synced before ``durable()``
returns, in groups; PostgreSQL sessions commit with ``synchronous_commit=on``."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import psycopg
import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.server.store import engine as engine_module
from benchrunner.server.store.engine import Database, fdatasync_path, sqlite_wal_path
from tests.databases import fresh_database, with_schema

WRITE = sa.text("INSERT INTO alembic_version_probe (n) VALUES (1)")


def _make_table(conn: Connection) -> None:
    conn.execute(sa.text("CREATE TABLE IF NOT EXISTS alembic_version_probe (n INTEGER)"))


def _write(conn: Connection) -> None:
    conn.execute(WRITE)


class WatchedSync:
    """The real sync, recorded, and held back until the test lets it go."""

    def __init__(self) -> None:
        self.calls: list[Path] = []
        self.gate = threading.Event()
        self.entered = threading.Event()

    def __call__(self, path: Path) -> None:
        self.calls.append(path)
        self.entered.set()
        if not self.gate.wait(timeout=60):
            raise TimeoutError("the test never released the sync")
        fdatasync_path(path)


def test_sqlite_durable_waits_for_a_wal_sync_that_covers_the_commit(tmp_path: Path) -> None:
    db = Database(str(tmp_path / "db.sqlite"))
    watched = WatchedSync()
    db.sync_file = watched

    async def scenario() -> None:
        await db.write(_make_table)
        await db.write(_write)
        waiting = asyncio.ensure_future(db.durable())
        await asyncio.to_thread(watched.entered.wait, 30)
        assert not waiting.done()  # the sync is held: nothing may be acknowledged yet
        watched.gate.set()
        await asyncio.wait_for(waiting, 30)
        assert watched.calls == [sqlite_wal_path(db.url)]
        await db.durable()  # nothing new committed: no second sync
        assert len(watched.calls) == 1

    try:
        asyncio.run(scenario())
    finally:
        db.close()


def test_sqlite_acknowledgements_share_syncs_under_load(tmp_path: Path) -> None:
    db = Database(str(tmp_path / "db.sqlite"))
    watched = WatchedSync()
    db.sync_file = watched

    async def writer_then_durable() -> None:
        await db.write(_write)
        await db.durable()

    async def scenario() -> None:
        await db.write(_make_table)
        first = asyncio.ensure_future(writer_then_durable())
        await asyncio.to_thread(watched.entered.wait, 30)  # one sync is under way...
        later = [asyncio.ensure_future(writer_then_durable()) for _ in range(50)]
        await asyncio.sleep(0)  # ...while 50 more commits ask for durability
        await asyncio.sleep(0)
        assert not any(task.done() for task in [first, *later])
        watched.gate.set()
        await asyncio.wait_for(asyncio.gather(first, *later), 30)
        # The first sync could not cover the later commits; one more covers all 50.
        assert len(watched.calls) == 2

    try:
        asyncio.run(scenario())
    finally:
        db.close()


def test_a_failed_sync_fails_the_acknowledgement(tmp_path: Path) -> None:
    db = Database(str(tmp_path / "db.sqlite"))

    def broken(path: Path) -> None:
        raise OSError(5, "Input/output error", str(path))

    db.sync_file = broken

    async def scenario() -> None:
        await db.write(_make_table)
        with pytest.raises(OSError, match="Input/output"):
            await db.durable()

    try:
        asyncio.run(scenario())
    finally:
        db.close()


@pytest.mark.postgresql
def test_postgresql_sessions_commit_synchronously_whatever_the_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # libpq takes PGOPTIONS as the default for every session this process opens: a server
    # started by an operator with it set would commit asynchronously, unless we override it.
    monkeypatch.setenv("PGOPTIONS", "-c synchronous_commit=off")

    def setting(conn: Connection) -> str:
        return str(conn.execute(sa.text("SHOW synchronous_commit")).scalar_one())

    with fresh_database("postgresql", tmp_path) as url:
        with_schema(url)
        db = Database(url)
        try:

            async def scenario() -> str:
                await db.durable()  # nothing to wait for: every commit was already durable
                return await db.read(setting)

            assert asyncio.run(scenario()) == "on"
            assert db.read_sync(setting) == "on"
        finally:
            db.close()


def _backend_pid(conn: Connection) -> int:
    return int(conn.execute(sa.text("SELECT pg_backend_pid()")).scalar_one())


def _terminate(conn: Connection, pid: int) -> bool:
    statement = sa.text("SELECT pg_terminate_backend(:pid)")
    return bool(conn.execute(statement, {"pid": pid}).scalar_one())


@pytest.mark.postgresql
def test_an_idle_connection_that_died_is_replaced_before_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a ping on every checkout, an idle pooled connection is still checked: one
    whose backend is gone (a database restart) is replaced, and the work succeeds."""
    monkeypatch.setattr(engine_module, "PING_AFTER_IDLE", 0.0)  # every pooled one is "idle"

    with fresh_database("postgresql", tmp_path) as url:
        db = Database(url)
        killer = Database(url)
        try:
            first = db.read_sync(_backend_pid)
            assert killer.write_sync(_terminate, first)
            second = db.read_sync(_backend_pid)
            assert second != first
        finally:
            db.close()
            killer.close()


@pytest.mark.postgresql
def test_the_executor_threads_keep_their_connections_and_replace_one_that_died(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Units run on the executors' threads reuse each thread's connection (the same backend,
    unit after unit); once that backend is gone, the next unit runs on a new one."""

    with fresh_database("postgresql", tmp_path) as url:
        db = Database(url, read_threads=1, write_threads=1)
        killer = Database(url)

        async def scenario() -> None:
            reads = {await db.read(_backend_pid) for _ in range(5)}
            writes = {await db.write(_backend_pid) for _ in range(5)}
            assert len(reads) == 1 and len(writes) == 1, (reads, writes)
            assert killer.write_sync(_terminate, reads.pop())
            monkeypatch.setattr(engine_module, "PING_AFTER_IDLE", 0.0)  # held ones are "idle"
            after = await db.read(_backend_pid)
            assert after == await db.read(_backend_pid)  # the new one is held in turn
            assert await db.write(_backend_pid) in writes  # the writer's own was not touched

        try:
            asyncio.run(scenario())
        finally:
            db.close()
            killer.close()


@pytest.mark.postgresql
def test_the_ping_of_an_idle_held_connection_is_not_one_of_the_units_statements(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A statement counter on the engine (as the tests that count a page's statements use)
    sees a unit's own statements only, however long its connection sat idle; and the ping
    leaves no transaction open on a connection that is not in autocommit."""
    with fresh_database("postgresql", tmp_path) as url:
        db = Database(url, read_threads=1, write_threads=1)
        seen: list[str] = []

        def count(_conn: object, _cursor: object, statement: str, *_: object) -> None:
            seen.append(statement)

        async def scenario() -> None:
            await db.read(_backend_pid)
            await db.write(_backend_pid)
            monkeypatch.setattr(engine_module, "PING_AFTER_IDLE", 0.0)  # every held one "idle"
            sa.event.listen(db.write_engine, "before_cursor_execute", count)
            try:
                await db.read(_backend_pid)
                await db.write(_backend_pid)
            finally:
                sa.event.remove(db.write_engine, "before_cursor_execute", count)

        try:
            asyncio.run(scenario())
            with db.write_engine.connect() as conn:  # not in autocommit
                assert engine_module._answers(conn)
                status = conn.connection.dbapi_connection.info.transaction_status  # type: ignore[union-attr]
                assert status == psycopg.pq.TransactionStatus.IDLE
        finally:
            db.close()
    assert seen == ["SELECT pg_backend_pid()"] * 2
