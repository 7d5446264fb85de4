"""Grouped commits on PostgreSQL. ``Database.write_acked``: alone, a durable commit as
``write``'s; beside another, a commit that does not wait for the disk, made durable by one WAL
flush that ``durable`` shares among every such commit before it; ``write_acked_each`` the
same in autocommit."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest
from sqlalchemy.engine import Connection

from benchrunner.server.store.engine import Database
from tests.databases import postgres_database, with_schema


@pytest.fixture
def db() -> Iterator[Database]:
    with postgres_database() as url:
        with_schema(url)  # the flush rewrites the server's own row of ``server_state``
        database = Database(url)
        database.write_sync(lambda conn: conn.exec_driver_sql("CREATE TABLE probe (n INTEGER)"))
        yield database
        database.close()


def insert(conn: Connection, n: int) -> str:
    """A row, and how this transaction commits."""
    conn.exec_driver_sql("INSERT INTO probe VALUES (%(n)s)", {"n": n})
    return str(conn.exec_driver_sql("SHOW synchronous_commit").scalar_one())


WAL_LSN = {
    "insert": "SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn",
    "flush": "SELECT pg_current_wal_flush_lsn() - '0/0'::pg_lsn",
}


def wal_lsn(conn: Connection, which: str) -> int:
    """Where the WAL's insertion (``insert``) or flush (``flush``) stands, as a number."""
    return int(conn.exec_driver_sql(WAL_LSN[which]).scalar_one())


def rows(db: Database) -> int:
    return int(
        db.read_sync(lambda conn: conn.exec_driver_sql("SELECT count(*) FROM probe")).scalar_one()
    )


def test_a_result_alone_commits_durably_and_needs_no_flush(db: Database) -> None:
    async def scenario() -> str:
        how = await db.write_acked(insert, 1)
        await db.durable()
        return how

    assert asyncio.run(scenario()) == "on"
    assert (db.grouped_commits, db.wal_flushes) == (0, 0)
    assert rows(db) == 1


def test_results_beside_another_share_one_flush_that_covers_them(db: Database) -> None:
    release = threading.Event()

    def held(conn: Connection) -> str:
        how = insert(conn, 0)
        release.wait(timeout=60)
        return how

    async def scenario() -> tuple[str, list[str], int, int]:
        first = asyncio.ensure_future(db.write_acked(held))
        await asyncio.sleep(0)  # the first is under way: the next ones are grouped
        beside = await asyncio.gather(*(db.write_acked(insert, n) for n in (1, 2, 3)))
        inserted = await db.read(wal_lsn, "insert")
        await asyncio.gather(*(db.durable() for _ in range(3)))
        flushed = await db.read(wal_lsn, "flush")
        release.set()
        return await first, beside, inserted, flushed

    first, beside, inserted, flushed = asyncio.run(scenario())
    assert first == "on"
    assert beside == ["off", "off", "off"]
    assert db.grouped_commits == 3
    assert db.wal_flushes == 1  # three waiters, one flush
    assert flushed >= inserted  # every grouped commit is on disk when ``durable`` returns
    assert rows(db) == 4


def in_autocommit(conn: Connection, n: int) -> tuple[str, bool]:
    """``insert``, and whether it ran outside a transaction (each statement committed)."""
    how = insert(conn, n)
    return how, bool(conn.connection.dbapi_connection.autocommit)  # type: ignore[union-attr]


def test_a_completed_runs_in_autocommit_alone_durable_beside_another_grouped(
    db: Database,
) -> None:
    """``write_acked_each``: no BEGIN and COMMIT; alone a durable commit, beside another
    acknowledged write one that ``durable``'s shared flush makes durable."""
    release = threading.Event()

    def held(conn: Connection) -> str:
        how = insert(conn, 0)
        release.wait(timeout=60)
        return how

    async def scenario() -> tuple[tuple[str, bool], tuple[str, bool], int, int]:
        alone = await db.write_acked_each(in_autocommit, 1)
        first = asyncio.ensure_future(db.write_acked(held))
        await asyncio.sleep(0)  # the first is under way: the next one is grouped
        beside = await db.write_acked_each(in_autocommit, 2)
        inserted = await db.read(wal_lsn, "insert")
        await db.durable()
        flushed = await db.read(wal_lsn, "flush")
        release.set()
        await first
        return alone, beside, inserted, flushed

    alone, beside, inserted, flushed = asyncio.run(scenario())
    assert alone == ("on", True)
    assert beside == ("off", True)
    assert (db.grouped_commits, db.wal_flushes) == (1, 1)
    assert flushed >= inserted
    assert rows(db) == 3


def test_a_result_grouped_after_a_flush_began_gets_a_flush_of_its_own(db: Database) -> None:
    release = threading.Event()

    def held(conn: Connection) -> str:
        release.wait(timeout=60)
        return insert(conn, 0)

    async def scenario() -> None:
        first = asyncio.ensure_future(db.write_acked(held))
        await asyncio.sleep(0)
        await db.write_acked(insert, 1)
        await db.durable()
        await db.write_acked(insert, 2)
        await db.durable()
        release.set()
        await first

    asyncio.run(scenario())
    assert (db.grouped_commits, db.wal_flushes) == (2, 2)
    assert rows(db) == 3


def test_a_resent_results_ack_waits_for_a_flush_of_what_another_replica_committed(
    db: Database,
) -> None:
    """Another replica's grouped commit is visible before it is on disk: ``flush_wal`` (the
    ``ack`` of a resent result) flushes past it even though this process counted nothing."""
    other = Database(db.url)
    release = threading.Event()

    def held(conn: Connection) -> str:
        release.wait(timeout=60)
        return insert(conn, 0)

    async def elsewhere() -> tuple[str, int]:
        first = asyncio.ensure_future(other.write_acked(held))
        await asyncio.sleep(0)
        how = await other.write_acked(insert, 1)  # grouped, and not flushed over there
        inserted = await other.read(wal_lsn, "insert")
        release.set()
        await first
        return how, inserted

    async def here() -> int:
        await db.flush_wal()
        return await db.read(wal_lsn, "flush")

    try:
        how, inserted = asyncio.run(elsewhere())
        flushed = asyncio.run(here())
    finally:
        other.close()
    assert how == "off"
    assert db.grouped_commits == 0 and db.wal_flushes == 1
    assert flushed >= inserted
