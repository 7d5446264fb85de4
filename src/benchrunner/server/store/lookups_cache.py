"""Lookups that rarely change (API tokens, projects, roles, organizations, specs, branches and
a project's names), cached per server process with invalidation across replicas
(docs/explanation/lookups-cache.md).

A store function reads through the cache with ``cached``; one that changes a cached row calls
``changed`` with the row's tags, after its statement and in its transaction. ``changed``:

- on PostgreSQL, sends ``NOTIFY`` on ``CHANNEL`` in the writer's transaction, delivered to every
  replica (this one too) when it commits, and each drops the entries under those tags;
- in this process, drops the entries at once and again when the transaction commits.

An entry is only ever stored after the unit that read it committed, and only if nothing was
invalidated since that unit began (``_epoch``): a read that raced a write never stores the old
row after the write's drop. On PostgreSQL the cache is off (nothing kept, nothing served) until
the replica listens on ``CHANNEL``, and is cleared and switched off whenever that connection is
lost: a notification missed meanwhile must not leave a revoked token usable. Entries also
expire after ``ttl`` seconds and the least recently used go beyond ``max_entries``.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Collection, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.server.store import capabilities

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

CHANNEL = "benchrunner_lookups"
"""The NOTIFY channel of invalidations; a payload is tags separated by spaces."""
OPTION = "benchrunner_lookups"
"""The execution option under which an engine carries its process's cache."""
EVERYTHING = "*"
"""The tag that drops every entry (a payload too long for one notification sends it)."""
MAX_PAYLOAD = 7000
"""Bytes; PostgreSQL refuses a notification payload of 8,000 or more."""

_SCOPE = "benchrunner_lookups_scope"
"""The key in ``Connection.info`` of the unit of work running on that connection."""
_MISSING = object()


def tag(kind: str, *ids: object) -> str:
    """A tag naming rows: ``tag("project", 3)`` -> ``project:3``."""
    return ":".join((kind, *(str(i) for i in ids)))


@dataclass
class _Entry:
    value: Any
    tags: tuple[str, ...]
    expires: float


@dataclass
class _Scope:
    """One unit of work's reads to store once it commits, and what it invalidated."""

    cache: LookupCache
    epoch: int
    puts: list[tuple[Hashable, Any, tuple[str, ...]]] = field(default_factory=list)
    dropped: set[str] = field(default_factory=set)


class LookupCache:
    """One process's cache; thread-safe (units run on database threads, notifications arrive
    on the event loop)."""

    def __init__(
        self,
        *,
        max_entries: int = 10_000,
        ttl: float = 60.0,
        enabled: bool = True,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        """``enabled``: serve and keep entries from the start (SQLite, one process); else only
        after ``enable`` (PostgreSQL, once the replica listens)."""
        self.max_entries = max_entries
        self.ttl = ttl
        self._monotonic = monotonic
        self._entries: OrderedDict[Hashable, _Entry] = OrderedDict()
        self._by_tag: dict[str, set[Hashable]] = {}
        self._lock = threading.Lock()
        self._epoch = 0
        self._enabled = enabled
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def enabled(self) -> bool:
        return self._enabled

    # -- the units of work (``engine.Database``)

    def begin(self, conn: Connection) -> None:
        """A unit starts on ``conn``: its reads may be stored once it commits."""
        conn.info[_SCOPE] = _Scope(self, self._epoch)

    def end(self, conn: Connection, *, committed: bool) -> None:
        """The unit on ``conn`` is over: if it committed, drop what it changed, then store
        what it read unless anything was invalidated since it began."""
        scope: _Scope | None = conn.info.pop(_SCOPE, None)
        if scope is None or not committed:
            return
        if scope.dropped:
            self.drop(scope.dropped)
        if not scope.puts or self.ttl <= 0:
            return
        with self._lock:
            if not self._enabled or self._epoch != scope.epoch:
                return
            expires = self._monotonic() + self.ttl
            for key, value, tags in scope.puts:
                self._store(key, _Entry(value, tags, expires))

    # -- reads

    def get(self, key: Hashable) -> Any:
        """The live entry's value, or ``_MISSING``."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or not self._enabled:
                self.misses += 1
                return _MISSING
            if entry.expires <= self._monotonic():
                self._remove(key)
                self.misses += 1
                return _MISSING
            self._entries.move_to_end(key)
            self.hits += 1
            return entry.value

    def known(self, key: Hashable) -> tuple[bool, Any]:
        """Whether the cache holds a live entry for ``key``, and its value: what a unit's
        ``cached`` read would answer without loading, asked from outside any unit (the event
        loop) to save a unit's hop to a database thread."""
        found = self.get(key)
        return (False, None) if found is _MISSING else (True, found)

    # -- invalidation

    def drop(self, tags: Iterable[str]) -> None:
        """Drop the entries under any of ``tags`` (``EVERYTHING``: all of them), and refuse
        to store what units that began before now have read."""
        with self._lock:
            self._epoch += 1
            wanted = set(tags)
            if EVERYTHING in wanted:
                self._entries.clear()
                self._by_tag.clear()
                return
            for name in wanted:
                for key in list(self._by_tag.get(name, ())):
                    self._remove(key)

    def received(self, payload: str) -> None:
        """A notification on ``CHANNEL``."""
        self.drop(payload.split() or [EVERYTHING])

    def disable(self) -> None:
        """Clear, and keep nothing until ``enable``: notifications may be missed from now."""
        with self._lock:
            self._enabled = False
        self.drop([EVERYTHING])

    def enable(self) -> None:
        """Serve and keep entries again; what units that began before now read is not kept
        (they may have read before the replica listened)."""
        with self._lock:
            self._epoch += 1
            self._enabled = True

    # -- the table, under the lock

    def _store(self, key: Hashable, entry: _Entry) -> None:
        if key in self._entries:
            self._remove(key)
        self._entries[key] = entry
        for name in entry.tags:
            self._by_tag.setdefault(name, set()).add(key)
        while len(self._entries) > self.max_entries:
            self._remove(next(iter(self._entries)))

    def _remove(self, key: Hashable) -> None:
        entry = self._entries.pop(key, None)
        if entry is None:
            return
        for name in entry.tags:
            keys = self._by_tag.get(name)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._by_tag[name]


def of(conn: Connection) -> LookupCache | None:
    """The cache of the process whose ``Database`` made ``conn``'s engine, if any."""
    found: LookupCache | None = conn.get_execution_options().get(OPTION)
    return found


def cached(
    conn: Connection,
    key: Hashable,
    load: Callable[[], T | None],
    tags: Callable[[T], Collection[str]],
) -> T | None:
    """``load()``'s value, from the cache when it holds ``key``; a value found (never None)
    is stored under ``tags(value)`` once this unit commits. Outside a unit of a ``Database``
    with a cache, ``load()`` alone."""
    scope: _Scope | None = conn.info.get(_SCOPE)
    if scope is None or scope.dropped:  # a unit that changed cached rows reads its own writes
        return load()
    found = scope.cache.get(key)
    if found is not _MISSING:
        return found  # type: ignore[no-any-return]
    value = load()
    if value is not None:
        scope.puts.append((key, value, tuple(tags(value))))
    return value


def cached_each(
    conn: Connection,
    kind: Hashable,
    items: Iterable[K],
    load: Callable[[list[K]], dict[K, V]],
    tags: Callable[[K, V], Collection[str]],
) -> dict[K, V]:
    """``cached`` for many items at once: the values of ``items`` (those ``load`` finds), the
    ones the cache lacks loaded together, in their order, by ``load``; each is keyed
    ``(kind, item)``."""
    scope: _Scope | None = conn.info.get(_SCOPE)
    wanted = list(items)
    if scope is None or scope.dropped:
        return load(wanted)
    found: dict[K, V] = {}
    missing: list[K] = []
    for item in wanted:
        value = scope.cache.get((kind, item))
        if value is _MISSING:
            missing.append(item)
        else:
            found[item] = value
    if missing:
        loaded = load(missing)
        for item, value in loaded.items():
            scope.puts.append(((kind, item), value, tuple(tags(item, value))))
        found.update(loaded)
    return found


def changed(conn: Connection, *tags: str) -> None:
    """Rows under ``tags`` change in this transaction: every replica drops their entries when
    it commits. Call it after the statement that changes them (an autocommit connection
    commits each statement as it runs)."""
    if not tags:
        return
    if capabilities.of(conn).notifies:
        payload = " ".join(sorted(set(tags)))
        if len(payload.encode()) > MAX_PAYLOAD:
            payload = EVERYTHING
        conn.execute(sa.select(sa.func.pg_notify(CHANNEL, payload)))
    scope: _Scope | None = conn.info.get(_SCOPE)
    if scope is not None:
        scope.dropped.update(tags)
        scope.cache.drop(tags)
        return
    cache = of(conn)
    if cache is not None:
        cache.drop(tags)
