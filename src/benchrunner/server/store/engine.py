"""Engines for the supported dialects and the thread hop between asyncio and the database.

SQLite (embedded default): WAL mode, one writer thread whose transactions all begin with
``BEGIN IMMEDIATE`` (so a claim's read and update are one serialized unit), and a small pool of
reader threads. PostgreSQL: one pool shared by both executors, whose threads each keep the
connection they took from it.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import gc
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Connection, Engine

from benchrunner.server.store import capabilities, lookups_cache
from benchrunner.server.store.lookups_cache import LookupCache
from benchrunner.server.store.tables import server_state
from benchrunner.server.store.unit_threads import UnitThreads

P = ParamSpec("P")
T = TypeVar("T")

Unit = Callable[Concatenate[Connection, P], T]
"""A unit of work: a plain function that takes a Connection first, then its own arguments.
``Database`` passes the arguments through as given, so mypy checks them against the unit's
signature at every call site."""


def is_sqlite(url: str) -> bool:
    return sa.make_url(url).get_backend_name() == "sqlite"


def normalize_url(url: str) -> str:
    """Accept ``postgresql://`` and pick psycopg 3; accept a bare file path for SQLite."""
    if "://" not in url:
        return f"sqlite:///{Path(url).resolve()}"
    parsed = sa.make_url(url)
    if parsed.get_backend_name() == "postgresql" and parsed.get_driver_name() != "psycopg":
        return parsed.set(drivername="postgresql+psycopg").render_as_string(hide_password=False)
    return url


HIDE_PARAMETERS = True
"""A failed statement's error names its statement, never its parameters: they hold the data
(metric values, names, tokens' hashes), and its error reaches the server's log."""

SQLITE_CACHE_KIB = 65_536
"""Each SQLite connection's page cache, at most (SQLite's default: 2 MiB). A report's metrics
go into the leaves of ``metric``'s indexes that the previous report's went into, one leaf per
series: 3,000 series take some 12 MiB of leaves, which a 2 MiB cache reads again from the
file for every report."""
SQLITE_CACHE_PRAGMA = "PRAGMA cache_size=-65536"
"""``SQLITE_CACHE_KIB`` as the statement that sets it (negative: in KiB); a test keeps the two
in step."""


def _sqlite_engine(url: str, *, immediate: bool, pool_size: int) -> Engine:
    engine = sa.create_engine(
        url,
        pool_size=pool_size,
        max_overflow=0,
        hide_parameters=HIDE_PARAMETERS,
        connect_args={"check_same_thread": False, "timeout": 30},
        execution_options={capabilities.OPTION: capabilities.SQLITE},
    )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # we issue BEGIN ourselves
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.execute(SQLITE_CACHE_PRAGMA)
        cursor.close()

    begin = "BEGIN IMMEDIATE" if immediate else "BEGIN"

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        conn.connection.driver_connection.execute(begin)  # type: ignore[union-attr]

    return engine


POSTGRESQL_SESSION = {"options": "-c synchronous_commit=on"}
"""Durable commits whatever the database's default: an acknowledged result must survive a
power cut (docs/explanation/results-safety.md)."""
POSTGRESQL_LAZY_SESSION = {"options": "-c synchronous_commit=off"}
"""Commits that do not wait for the disk (``Database.write_lazy``)."""


def sqlite_wal_path(url: str) -> Path:
    database = sa.make_url(url).database
    if not database:
        raise ValueError(f"no database file in {url!r}")
    return Path(f"{database}-wal")


def fdatasync_path(path: Path) -> None:
    """Flush a file's written data to the disk, through a descriptor of our own: the kernel
    writes back every dirty page of the file, whoever wrote it. A WAL that does not exist
    (nothing written yet, or checkpointed away at close) holds nothing to sync."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return
    try:
        os.fdatasync(fd)
    finally:
        os.close(fd)


WAL_FLUSH_ROW = "wal-flush"
"""The ``server_state`` row whose write a WAL flush commits (``_flush_wal``)."""


def _flush_wal(conn: Connection) -> None:
    """A durable commit of the smallest write this server may make anywhere: its own row of
    ``server_state``, rewritten. PostgreSQL flushes the WAL up to the commit record, so every
    commit before it (any session's, any replica's) is on disk when it returns. A commit that
    wrote no WAL (a transaction id alone) would not wait for the disk."""
    statement = postgresql.insert(server_state).values(
        name=WAL_FLUSH_ROW, value="", created=sa.func.now()
    )
    conn.execute(
        statement.on_conflict_do_update(
            index_elements=[server_state.c.name], set_={"value": statement.excluded.value}
        )
    )


PING_AFTER_IDLE = 1.0
"""Seconds a pooled PostgreSQL connection may sit unused before it is pinged on checkout."""


def _postgresql_engine(url: str, *, pool_size: int, durable: bool = True) -> Engine:
    """Connections are checked before use only when they have been idle: a connection
    that served a moment ago is alive, and pinging it on every checkout (``pool_pre_ping``)
    costs a round trip per unit of work. One found dead is replaced transparently."""
    engine = sa.create_engine(
        url,
        pool_size=pool_size,
        max_overflow=10,
        hide_parameters=HIDE_PARAMETERS,
        connect_args=POSTGRESQL_SESSION if durable else POSTGRESQL_LAZY_SESSION,
        execution_options={capabilities.OPTION: capabilities.POSTGRESQL},
    )

    @event.listens_for(engine, "checkin")
    def _on_checkin(_dbapi_connection: Any, record: Any) -> None:
        record.info["idle_since"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _on_checkout(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        idle_since = record.info.get("idle_since")
        if idle_since is None or time.monotonic() - idle_since < PING_AFTER_IDLE:
            return
        try:
            alive = engine.dialect.do_ping(dbapi_connection)
        except Exception as exc:
            raise sa.exc.DisconnectionError("idle connection failed its ping") from exc
        if not alive:
            raise sa.exc.DisconnectionError("idle connection failed its ping")

    return engine


def make_engine(
    url: str,
    *,
    writer: bool = True,
    pool_size: int = 5,
    durable: bool = True,
) -> Engine:
    """An engine for ``url``, carrying its engine's ``Capabilities`` (``capabilities.of``);
    ``NotImplementedError`` for a database engine benchrunner does not run on. ``durable``:
    PostgreSQL's commits wait for the disk (else see ``Database.write_lazy``)."""
    url = normalize_url(url)
    chosen = capabilities.for_backend(sa.make_url(url).get_backend_name())
    if chosen is capabilities.SQLITE:
        return _sqlite_engine(url, immediate=writer, pool_size=pool_size)
    return _postgresql_engine(url, pool_size=pool_size, durable=durable)


class _HeldConnections:
    """One connection per engine and thread, kept open between the units a thread runs.

    On this machine checking a connection out of SQLAlchemy's pool and returning it (events,
    isolation level set and reset, the reset's rollback) costs 30-80 µs of CPU per unit, up to
    a fifth of a short unit (``benchmarks/db_units.py``). Only the database executors' own
    threads hold connections, so their number stays bounded by the executors' sizes. A
    connection idle for ``PING_AFTER_IDLE`` is pinged before use, as a pooled one is at
    checkout, and one that broke is replaced by the next unit.
    """

    def __init__(self) -> None:
        self._local = threading.local()
        self._all: list[Connection] = []
        self._lock = threading.Lock()

    def run(self, engine: Engine, unit: Unit[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """``unit`` in one transaction on this thread's connection to ``engine``."""
        held: dict[Engine, tuple[Connection, float]] = self._local.__dict__.setdefault("held", {})
        conn = self._usable(held, engine)
        try:
            result = _in_transaction(conn, unit, *args, **kwargs)
        except BaseException:
            if conn.invalidated:
                self._drop(held, engine)
            raise
        held[engine] = (conn, time.monotonic())
        return result

    def _usable(self, held: dict[Engine, tuple[Connection, float]], engine: Engine) -> Connection:
        """The thread's connection to ``engine``: the one it holds if that still answers, else
        a new one."""
        if engine in held:
            conn, used = held[engine]
            if not (conn.closed or conn.invalidated) and (
                time.monotonic() - used < PING_AFTER_IDLE or _answers(conn)
            ):
                return conn
            self._drop(held, engine)
        conn = engine.connect()
        with self._lock:
            self._all.append(conn)
        held[engine] = (conn, time.monotonic())
        return conn

    def _drop(self, held: dict[Engine, tuple[Connection, float]], engine: Engine) -> None:
        """Forget and close this thread's connection to ``engine``."""
        conn, _ = held.pop(engine)
        with self._lock:
            if conn in self._all:
                self._all.remove(conn)
        with contextlib.suppress(Exception):
            conn.close()

    def close(self) -> None:
        """Close every held connection; call once the threads holding them are done."""
        with self._lock:
            held, self._all = self._all, []
        for conn in held:
            with contextlib.suppress(Exception):
                conn.close()


class _Deferrals:
    """The blocks of ``collections_deferred`` under way, on every thread."""

    lock = threading.Lock()
    under_way = 0
    turned_off = False
    """Whether the first of them turned collection off (it was on)."""


@contextlib.contextmanager
def collections_deferred() -> Iterator[None]:
    """No automatic garbage collection while the block runs, on any thread: SQLite's writer
    held there is never held through a full collection too (tens of milliseconds with a large
    heap). One the block's allocations made due runs at the first allocation after it.
    Collection comes back on when the last block under way, on any thread, ends, and only if
    the first of them turned it off."""
    with _Deferrals.lock:
        if _Deferrals.under_way == 0:
            _Deferrals.turned_off = gc.isenabled()
            gc.disable()
        _Deferrals.under_way += 1
    try:
        yield
    finally:
        with _Deferrals.lock:
            _Deferrals.under_way -= 1
            if _Deferrals.under_way == 0 and _Deferrals.turned_off:
                gc.enable()


def _in_transaction(conn: Connection, unit: Unit[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """``unit`` in one transaction on ``conn``, as one unit of work of the lookups cache of
    ``conn``'s engine (``lookups_cache``): what it read is kept once it committed."""
    cache = lookups_cache.of(conn)
    if cache is None:
        with conn.begin():
            return unit(conn, *args, **kwargs)
    cache.begin(conn)
    committed = False
    try:
        with conn.begin():
            result = unit(conn, *args, **kwargs)
        committed = True
    finally:
        cache.end(conn, committed=committed)
    return result


def _answers(conn: Connection) -> bool:
    """Whether ``conn``'s database session is alive, pinged on its DBAPI connection as the
    pool's checkout pings one: no statement events (a ping is not the work of any unit), and
    no transaction left open by it (the dialect pings in autocommit)."""
    dbapi_connection = conn.connection.dbapi_connection
    if dbapi_connection is None:
        return False
    try:
        return bool(conn.dialect.do_ping(dbapi_connection))
    except Exception:
        return False


class Database:
    """Runs units of work (plain functions taking a Connection) off the event loop.

    ``write`` units run one at a time on SQLite, each in its own transaction; ``read`` units may
    run concurrently. A unit either commits as a whole or raises and rolls back.

    Each way to write is one promise about durability, and each step of a job has one:
    ``write`` (a transaction, durable when it returns: most writes), ``write_each`` (each
    statement its own durable commit: a runner's ``running``, a heartbeat, a submission of
    one statement, a claim), ``write_acked`` (a transaction whose commit may share one
    flush of the WAL, durable after ``durable()``: a runner's failure, before its ``ack``),
    ``write_acked_each`` (``write_acked`` in autocommit: a runner's ``completed``) and
    ``write_lazy`` (never made durable by itself: what is sent again if lost, a live log).
    SQLite, whose commits cost no round trip, runs them all as ``write``.
    """

    def __init__(
        self,
        url: str,
        *,
        read_threads: int = 2,
        write_threads: int | None = None,
        sync_file: Callable[[Path], None] | None = None,
        lookups_ttl: float = 60.0,
        lookups_entries: int = 10_000,
    ) -> None:
        """``sync_file`` makes a file's written data durable (``fdatasync_path`` by default;
        tests replace the attribute to watch when the WAL is synced); ``lookups_ttl`` and
        ``lookups_entries`` bound the cache of lookups (``lookups_cache``)."""
        self.url = normalize_url(url)
        self.sqlite = is_sqlite(self.url)
        self.sync_file = sync_file or fdatasync_path
        self._commits = 0
        """SQLite write transactions committed so far by this process."""
        self._synced = 0
        """Of those (on PostgreSQL, of ``grouped_commits``), how many are known to be on disk."""
        self._syncing: asyncio.Future[None] | None = None
        self._acked_under_way = 0
        """PostgreSQL: ``write_acked`` units and ``durable`` waits under way on the event loop."""
        self.grouped_commits = 0
        """PostgreSQL: ``write_acked`` and ``write_acked_each`` units committed without waiting
        for the disk."""
        self.wal_flushes = 0
        """PostgreSQL: flushes made for them or for ``flush_wal`` (each covering every commit
        before it)."""
        self._flushes_begun = 0
        self._flushed_from = 0
        """PostgreSQL: the number, counted when it began, of the latest flush finished."""
        self.lookups = LookupCache(
            max_entries=lookups_entries, ttl=lookups_ttl, enabled=self.sqlite
        )
        """This process's cache of lookups; on PostgreSQL off until ``lookups.enable()`` (the
        replica listens for invalidations)."""
        carry = {lookups_cache.OPTION: self.lookups}
        # SQLite has one writer whatever we do; PostgreSQL overlaps writes (row locks suffice).
        write_threads = write_threads or (1 if self.sqlite else 4)
        if self.sqlite:
            self.write_engine = make_engine(self.url, writer=True, pool_size=write_threads)
            # The event loop's own reader and one per reader thread (``read_apart``).
            self.read_engine = make_engine(self.url, writer=False, pool_size=read_threads + 1)
            self.read_engine.update_execution_options(**carry)
        else:
            # Held from this pool, at most: two connections per writer thread (``write``,
            # ``write_each``) and two per reader thread (``read``, ``read_snapshot``); with the
            # defaults 12, within the pool's size and its overflow of 10.
            self.write_engine = make_engine(
                self.url, pool_size=max(read_threads, write_threads) + 2
            )
        self.write_engine.update_execution_options(**carry)
        if not self.sqlite:
            # Reads run in autocommit: no BEGIN and COMMIT round trips around them. At READ
            # COMMITTED (PostgreSQL's default, which we keep) each statement takes its own
            # snapshot, in a transaction or not, so a read unit sees exactly what it saw
            # inside one (reads take no locks).
            self.read_engine = self.write_engine.execution_options(isolation_level="AUTOCOMMIT")
        self._snapshot_engine = (
            self.read_engine
            if self.sqlite
            else self.write_engine.execution_options(
                isolation_level="REPEATABLE READ", postgresql_readonly=True
            )
        )
        """Where ``read_snapshot`` runs: on PostgreSQL a read-only transaction whose
        statements share one snapshot; SQLite's read units are one transaction already."""
        self.capabilities = capabilities.of(self.write_engine)
        """What this engine does that the other does not, chosen once with the engines."""
        self.lazy_engine = (
            self.write_engine
            if self.sqlite
            else make_engine(self.url, pool_size=write_threads, durable=False)
        )
        """Where ``write_lazy`` commits: PostgreSQL connections whose commits do not wait."""
        if not self.sqlite:
            self.lazy_engine.update_execution_options(**carry)
        self._lazy_autocommit = (
            self.lazy_engine
            if self.sqlite
            else self.lazy_engine.execution_options(isolation_level="AUTOCOMMIT")
        )
        """Where ``write_acked_each`` commits when grouped: autocommit, commits not waiting."""
        # SQLite work is short and CPU-bound: running it on the event loop is faster than a
        # thread hop (the GIL gives threads no parallelism here) and keeps writes serialized.
        self.inline = self.sqlite
        self._inline_connections: dict[Engine, Connection] = {}
        """SQLite, inline: one connection per engine, kept open: checking one out of the pool
        and resetting it on return costs several times an empty transaction."""
        self._held = _HeldConnections()
        """PostgreSQL: each executor thread's own connection, kept open between units."""
        self._writer = UnitThreads(write_threads, "db-write")
        self._readers = UnitThreads(read_threads, "db-read")
        self._wal_syncer = UnitThreads(1, "wal-sync")
        """SQLite: where the WAL is synced (``durable``)."""

    def write_sync(self, unit: Unit[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        with self._writer_held(), self.write_engine.connect() as conn:
            result = _in_transaction(conn, unit, *args, **kwargs)
        self._commits += 1
        return result

    def _writer_held(self) -> contextlib.AbstractContextManager[None]:
        """What a write holding SQLite's writer runs in (``collections_deferred``); nothing
        on PostgreSQL, whose writes hold row locks only."""
        return collections_deferred() if self.sqlite else contextlib.nullcontext()

    def read_sync(self, unit: Unit[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        with self.read_engine.connect() as conn:
            return _in_transaction(conn, unit, *args, **kwargs)

    async def write(self, unit: Unit[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        if self.inline:
            with collections_deferred():
                result = self._run_inline(self.write_engine, unit, *args, **kwargs)
            self._commits += 1
            return result
        return await self._hop(self._writer, self._write_held, unit, *args, **kwargs)

    async def write_each(self, unit: Unit[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """A write unit each of whose statements stands on its own (a single compare-and-set,
        idempotent liveness refreshes): on PostgreSQL it runs without a transaction, each
        statement committed, as durably as any commit, when it returns; that saves the BEGIN
        and COMMIT round trips. SQLite, whose transactions cost no round trip and whose
        transitions are two statements, runs it as ``write``."""
        if self.inline:
            return await self.write(unit, *args, **kwargs)
        return await self._hop(self._writer, self._read_held, unit, *args, **kwargs)

    async def write_acked(self, unit: Unit[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """A write that the caller acknowledges only after ``durable()`` (a runner's result,
        which the runner deletes on the ``ack``). Alone, it commits durably, as ``write``
        does. On PostgreSQL, while another one or a ``durable`` wait is under way, it commits
        without waiting for the disk and ``durable`` waits for one flush of the WAL shared by
        every such commit before it (group commit): a burst of results from many runners
        costs a few flushes, and no writer thread waits on the disk meanwhile
        (docs/explanation/results-safety.md)."""
        return await self._acked(self._write_held, self._write_lazy_held, unit, *args, **kwargs)

    async def write_acked_each(self, unit: Unit[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """``write_acked`` for a unit of statements each of which stands on its own (a runner's
        ``completed``: its last live-log chunks, move, output and parse info, one statement
        where it can be):
        on PostgreSQL it runs in autocommit, without BEGIN and COMMIT,
        committed durably alone (``write_each``), or, beside another acknowledged write or a
        ``durable`` wait, without waiting for the disk, made durable by ``durable``'s shared
        flush. SQLite: ``write``."""
        return await self._acked(self._read_held, self._deferred_held, unit, *args, **kwargs)

    async def _acked(
        self,
        alone: Callable[Concatenate[Unit[P, T], P], T],
        grouped: Callable[Concatenate[Unit[P, T], P], T],
        unit: Unit[P, T],
        /,
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        """An acknowledged write: run by ``alone`` (committed durably) when no other one or
        ``durable`` wait is under way, else by ``grouped`` (committed without waiting for the
        disk, made durable by ``durable``'s shared flush)."""
        if self.inline:
            return await self.write(unit, *args, **kwargs)
        beside_another = self._acked_under_way > 0
        self._acked_under_way += 1
        try:
            if not beside_another:
                return await self._hop(self._writer, alone, unit, *args, **kwargs)
            result = await self._hop(self._writer, grouped, unit, *args, **kwargs)
            self.grouped_commits += 1
            return result
        finally:
            self._acked_under_way -= 1

    async def write_lazy(self, unit: Unit[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """A write that a crash may lose without harm, because it is made again (the live
        log's chunks, which the runner resends): on PostgreSQL it commits without waiting for
        the WAL to reach the disk (``synchronous_commit=off``), at no extra statement; a
        later durable commit of this server makes it durable too, as the WAL is written in
        order. SQLite's commits never wait for the disk (``durable`` does): it is ``write``."""
        if self.inline:
            return await self.write(unit, *args, **kwargs)
        return await self._hop(self._writer, self._write_lazy_held, unit, *args, **kwargs)

    async def read(self, unit: Unit[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        if self.inline:
            return self._run_inline(self.read_engine, unit, *args, **kwargs)
        return await self._hop(self._readers, self._read_held, unit, *args, **kwargs)

    async def read_snapshot(self, unit: Unit[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """``read`` whose statements all see the database as of one moment: for an answer
        made of several reads that must agree (a job's row and its events). On PostgreSQL it
        costs a BEGIN and a COMMIT round trip, which ``read``'s autocommit saves: there each
        statement sees the commits made before it began, so two reads may straddle a commit.
        SQLite's read units are already one snapshot (``read``)."""
        if self.inline:
            return self._run_inline(self.read_engine, unit, *args, **kwargs)
        return await self._hop(self._readers, self._snapshot_held, unit, *args, **kwargs)

    async def read_apart(self, unit: Unit[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """``read`` on a reader thread whatever the engine, SQLite's too: for a long read unit
        that would hold the event loop where SQLite's units run inline (a report's look-back,
        its reads and change-point detector over thousands of series)."""
        return await self._hop(self._readers, self._read_held, unit, *args, **kwargs)

    def _write_held(self, unit: Unit[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        result = self._held.run(self.write_engine, unit, *args, **kwargs)
        self._commits += 1
        return result

    def _write_lazy_held(self, unit: Unit[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        return self._held.run(self.lazy_engine, unit, *args, **kwargs)

    def _deferred_held(self, unit: Unit[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        return self._held.run(self._lazy_autocommit, unit, *args, **kwargs)

    def _read_held(self, unit: Unit[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """``unit`` on this thread's autocommit connection (PostgreSQL's reads, and the
        writes of ``write_each`` on the writer threads)."""
        return self._held.run(self.read_engine, unit, *args, **kwargs)

    def _snapshot_held(self, unit: Unit[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        return self._held.run(self._snapshot_engine, unit, *args, **kwargs)

    def _run_inline(
        self, engine: Engine, unit: Unit[P, T], /, *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """One transaction on the event loop's own connection to ``engine``."""
        conn = self._inline_connections.get(engine)
        if conn is None or conn.closed or conn.invalidated:
            conn = self._inline_connections[engine] = engine.connect()
        try:
            return _in_transaction(conn, unit, *args, **kwargs)
        except BaseException:
            if conn.invalidated:  # the database connection broke: open a new one next time
                conn.close()
                del self._inline_connections[engine]
            raise

    async def durable(self) -> None:
        """Return once every write this process committed before the call would survive a
        power cut (``write_lazy``'s excepted).

        PostgreSQL commits with ``synchronous_commit=on``, each durable when it returns, but
        for ``write_acked``'s grouped commits: for those, one statement that commits durably
        (``_flush_wal``) flushes the WAL up to itself, which covers every commit before it, and
        every caller that arrives while one runs shares the next. SQLite runs with
        ``synchronous=NORMAL``, whose commits reach the WAL file but not the disk; here the WAL
        is synced on a thread, shared the same way. Either way a burst of acknowledgements
        costs one or two flushes, not one each, and the event loop never waits on the disk.
        """
        if not self.sqlite:
            await self._flush_grouped()
            return
        wanted = self._commits
        while self._synced < wanted:
            if self._syncing is None:
                self._syncing = asyncio.ensure_future(self._sync_wal())
            await asyncio.shield(self._syncing)

    @functools.cached_property
    def _wal_path(self) -> Path:
        return sqlite_wal_path(self.url)

    async def flush_wal(self) -> None:
        """Return once every commit visible now is on disk, whoever made it: the ``ack`` of a
        result this call did not store (a resent one), which another replica, or a result of
        this one not yet counted, may have committed without waiting. On PostgreSQL, a flush
        that began after the call (callers that arrive together share one); SQLite, whose
        writes are all this process's, ``durable``."""
        if self.sqlite:
            await self.durable()
            return
        wanted = self._flushes_begun + 1
        while self._flushed_from < wanted:
            if self._syncing is None:
                self._syncing = asyncio.ensure_future(self._flush_wal())
            await asyncio.shield(self._syncing)

    async def _flush_grouped(self) -> None:
        wanted = self.grouped_commits
        if self._synced >= wanted:
            return
        self._acked_under_way += 1  # a result arriving meanwhile joins the flush to come
        try:
            while self._synced < wanted:
                if self._syncing is None:
                    self._syncing = asyncio.ensure_future(self._flush_wal())
                await asyncio.shield(self._syncing)
        finally:
            self._acked_under_way -= 1

    async def _flush_wal(self) -> None:
        covered = self.grouped_commits
        self._flushes_begun += 1
        begun = self._flushes_begun
        try:
            await self._hop(self._writer, self._read_held, _flush_wal)
            self.wal_flushes += 1
            self._synced = max(self._synced, covered)
            self._flushed_from = max(self._flushed_from, begun)
        finally:
            self._syncing = None

    async def _sync_wal(self) -> None:
        covered = self._commits
        try:
            await self._wal_syncer.run(functools.partial(self.sync_file, self._wal_path))
            self._synced = max(self._synced, covered)
        finally:
            self._syncing = None

    @staticmethod
    async def _hop(
        threads: UnitThreads,
        run: Callable[Concatenate[Unit[P, T], P], T],
        unit: Unit[P, T],
        /,
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        ctx = contextvars.copy_context()
        return await threads.run(functools.partial(ctx.run, run, unit, *args, **kwargs))

    def check_reachable(self) -> None:
        """Raise unless a new connection reaches the database now. Blocking.

        Only SQLite needs it: its pooled connections keep reading a file removed under them,
        where PostgreSQL's are pinged after idling and fail when the server is gone."""
        if not self.sqlite:
            return
        with contextlib.closing(sqlite3.connect(self._file_uri, uri=True, timeout=5)) as conn:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()

    @functools.cached_property
    def _file_uri(self) -> str:
        """SQLite: the database file, to open only if it exists (``check_reachable``)."""
        database = sa.make_url(self.url).database or ""
        return f"{Path(database).resolve().as_uri()}?mode=rw"

    def close(self) -> None:
        for conn in self._inline_connections.values():
            conn.close()
        self._inline_connections.clear()
        self._writer.close()
        self._readers.close()
        self._wal_syncer.close()
        self._held.close()
        self.write_engine.dispose()  # PostgreSQL's read engine shares this pool
        if self.sqlite:
            self.read_engine.dispose()
        else:
            self.lazy_engine.dispose()
