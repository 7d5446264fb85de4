"""PostgreSQL read units run in autocommit (no BEGIN/COMMIT round trips); writes stay in a
transaction, on the same pooled connections; ``write_each`` units, whose statements each
stand on their own, run in autocommit too."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator

import pytest
from sqlalchemy.engine import Connection

from benchrunner.server.store.engine import Database
from tests.databases import postgres_database


@pytest.fixture
def db() -> Iterator[Database]:
    with postgres_database() as url:
        database = Database(url)
        yield database
        database.close()


def autocommit(conn: Connection) -> bool:
    return bool(conn.connection.driver_connection.autocommit)  # type: ignore[union-attr]


def in_transaction(conn: Connection) -> bool:
    status = conn.connection.driver_connection.info.transaction_status  # type: ignore[union-attr]
    return bool(status.name != "IDLE")


def test_reads_run_in_autocommit_and_writes_in_a_transaction(db: Database) -> None:
    for _ in range(3):  # alternate, so pooled connections pass from reads to writes and back
        assert db.read_sync(lambda conn: (autocommit(conn), in_transaction(conn))) == (
            True,
            False,
        )
        assert db.write_sync(lambda conn: (autocommit(conn), in_transaction(conn))) == (
            False,
            False,  # nothing ran yet: psycopg begins with the first statement
        )


def test_a_write_after_reads_is_rolled_back_as_a_whole(db: Database) -> None:
    db.write_sync(lambda conn: conn.exec_driver_sql("CREATE TABLE probe (n INTEGER)"))
    assert (
        db.read_sync(lambda conn: conn.exec_driver_sql("SELECT count(*) FROM probe").scalar()) == 0
    )

    def fails(conn: Connection) -> None:
        conn.exec_driver_sql("INSERT INTO probe VALUES (1)")
        raise RuntimeError("after the insert")

    with pytest.raises(RuntimeError):
        db.write_sync(fails)
    assert (
        db.read_sync(lambda conn: conn.exec_driver_sql("SELECT count(*) FROM probe").scalar()) == 0
    )


def _transaction_ids(conn: Connection) -> tuple[int, int]:
    first = conn.exec_driver_sql("SELECT txid_current()").scalar_one()
    return first, conn.exec_driver_sql("SELECT txid_current()").scalar_one()


def test_write_each_commits_each_statement_and_write_keeps_one_transaction(
    db: Database,
) -> None:
    async def scenario() -> tuple[tuple[int, int], tuple[int, int], tuple[int, int]]:
        return (
            await db.write_each(_transaction_ids),
            await db.write(_transaction_ids),
            await db.read(_transaction_ids),
        )

    each, whole, read = asyncio.run(scenario())
    assert each[0] != each[1]  # each statement its own transaction: no BEGIN, no COMMIT
    assert whole[0] == whole[1]
    assert read[0] != read[1]


def test_a_snapshot_read_does_not_see_a_commit_made_between_its_statements(
    db: Database,
) -> None:
    """``read`` takes a snapshot per statement, so its two reads can straddle another
    session's commit; ``read_snapshot``'s two reads agree."""
    db.write_sync(lambda conn: conn.exec_driver_sql("CREATE TABLE probe (n INTEGER)"))

    def two_counts_around_a_commit(conn: Connection) -> tuple[int, int]:
        first = conn.exec_driver_sql("SELECT count(*) FROM probe").scalar_one()
        db.write_sync(lambda other: other.exec_driver_sql("INSERT INTO probe VALUES (1)"))
        return first, conn.exec_driver_sql("SELECT count(*) FROM probe").scalar_one()

    async def scenario() -> tuple[tuple[int, int], tuple[int, int]]:
        return (
            await db.read(two_counts_around_a_commit),
            await db.read_snapshot(two_counts_around_a_commit),
        )

    straddled, one_snapshot = asyncio.run(scenario())
    assert straddled == (0, 1)
    assert one_snapshot == (1, 1)


def test_a_snapshot_read_may_not_write(db: Database) -> None:
    db.write_sync(lambda conn: conn.exec_driver_sql("CREATE TABLE probe (n INTEGER)"))
    with pytest.raises(Exception, match="read-only transaction"):
        asyncio.run(
            db.read_snapshot(lambda conn: conn.exec_driver_sql("INSERT INTO probe VALUES (1)"))
        )


POOL_KEPT = 6
"""Connections the test database's pool keeps idle (``Database``'s defaults: the larger of its
read and write threads, 2 and 4, plus 2)."""


def _isolation(conn: Connection) -> tuple[str, str]:
    level = conn.exec_driver_sql("SHOW transaction_isolation").scalar_one()
    read_only = conn.exec_driver_sql("SHOW transaction_read_only").scalar_one()
    return str(level), str(read_only)


def test_a_snapshot_reads_connection_leaves_the_others_at_read_committed(db: Database) -> None:
    """``read_snapshot`` runs on connections of its own: the reads and writes around it keep
    PostgreSQL's default isolation, read-write, also on connections it used before."""

    snapshot_pid: list[int] = []

    def isolation_and_pid(conn: Connection) -> tuple[str, str]:
        snapshot_pid.append(conn.connection.driver_connection.info.backend_pid)  # type: ignore[union-attr]
        return _isolation(conn)

    async def scenario() -> list[tuple[str, str]]:
        seen = [await db.read_snapshot(isolation_and_pid)]
        for _ in range(3):
            seen += [await db.read(_isolation), await db.write(_isolation)]
        return seen

    snapshot, *others = asyncio.run(scenario())
    assert snapshot == ("repeatable read", "on")
    assert set(others) == {("read committed", "off")}
    # Every held connection back to the pool (reset on its way there), then as many taken out
    # as the pool keeps: the snapshot's is among them, at the default again.
    db._held.close()
    with contextlib.ExitStack() as stack:
        pooled = [stack.enter_context(db.write_engine.connect()) for _ in range(POOL_KEPT)]
        pids = {conn.connection.driver_connection.info.backend_pid for conn in pooled}  # type: ignore[union-attr]
        assert snapshot_pid[0] in pids
        assert {_isolation(conn) for conn in pooled} == {("read committed", "off")}
