"""No garbage collection while SQLite's writer is held (``engine.collections_deferred``): a
full collection inside a write would hold the writer through it."""

from __future__ import annotations

import asyncio
import gc
import threading

from sqlalchemy.engine import Connection

from benchrunner.server.store.engine import Database, collections_deferred
from tests.databases import with_schema


def _collecting(_conn: Connection) -> bool:
    return gc.isenabled()


def test_a_write_holding_sqlites_writer_runs_with_collection_off(database_url: str) -> None:
    with_schema(database_url)
    db = Database(database_url)
    try:
        # blocking first: SQLite's inline writes then keep the writer's one connection
        in_write_sync = db.write_sync(_collecting)
        in_write = asyncio.run(db.write(_collecting))
        in_read = asyncio.run(db.read(_collecting))
    finally:
        db.close()
    # PostgreSQL's writes hold row locks only: collection stays on there.
    assert in_write is (not db.sqlite)
    assert in_write_sync is (not db.sqlite)
    assert in_read is True
    assert gc.isenabled()


def test_a_deferral_leaves_collection_as_it_found_it() -> None:
    with collections_deferred():
        assert not gc.isenabled()
        with collections_deferred():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with collections_deferred():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_collection_comes_back_only_when_the_last_deferral_on_any_thread_ends() -> None:
    """A write of a worker thread (``write_sync``) beside one of the event loop's: the first
    to end does not turn collection back on under the other."""
    entered, first_done = threading.Event(), threading.Event()
    seen: list[bool] = []

    def other_thread() -> None:
        with collections_deferred():
            entered.set()
            assert first_done.wait(30)
            seen.append(gc.isenabled())

    with collections_deferred():
        worker = threading.Thread(target=other_thread)
        worker.start()
        assert entered.wait(30)
    first_done.set()
    worker.join(30)
    assert seen == [False]
    assert gc.isenabled()
