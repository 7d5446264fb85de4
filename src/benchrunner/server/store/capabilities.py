"""What one database engine does that the other does not, as one object per engine.

The store's functions never ask which engine they run on: they ask their connection for its
``Capabilities`` (``of(conn)``), which ``engine.make_engine`` attaches to every engine it makes,
chosen once from the URL. A new difference between SQLite and PostgreSQL is a new field here,
set for both, and the function that needs it reads the field.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine

OPTION = "benchrunner_capabilities"
"""The execution option under which an engine carries its capabilities."""


@dataclass(frozen=True, eq=False)
class Capabilities:
    """One engine's abilities. Compared and hashed by identity: there are two, ``SQLITE`` and
    ``POSTGRESQL``, and the statement caches are keyed by them."""

    name: str
    """The backend's name, as SQLAlchemy spells it."""
    insert: Callable[[sa.Table], postgresql.Insert | sqlite.Insert]
    """``INSERT`` with this engine's ``ON CONFLICT`` clauses: each dialect spells them with its
    own ``insert`` (``conflicts``)."""
    writes_in_ctes: bool
    """A statement may write in its CTEs, so a transition, its event and a read that follows
    are one round trip (PostgreSQL). SQLite runs them as separate statements, which cost it no
    round trip."""
    concurrent_writers: bool
    """Several transactions write at once (writer threads, replicas), so a check and the write
    that depends on it, where no row lock covers the check, take an advisory lock (tier limits,
    migrations). SQLite has one writer at a time (``BEGIN IMMEDIATE``)."""
    analyze_by_hand: bool
    """The server gathers the query planner's statistics itself (``planner``): SQLite gathers
    none unless asked, where PostgreSQL's autovacuum does."""
    notifies: bool
    """Other server processes share the database and hear of its changes through
    ``NOTIFY`` (``lookups_cache``); SQLite has one server process."""
    alters_by_copy: bool
    """``ALTER TABLE`` of a column's type or constraints rebuilds the table (SQLite): the
    migrations run in Alembic's batch mode, with foreign keys off around them, so that dropping
    the old copy deletes no referencing row."""
    bulk_arrays: bool
    """Many rows cross in one value a column: sent as arrays that a statement unnests (the
    judgment's boundaries, the heartbeats' shared write), read back packed in each column's
    binary form (``history``'s reads), where the driver would make a Python object per row
    (PostgreSQL). SQLite's driver runs in the process, where a row costs no round trip."""


SQLITE = Capabilities(
    name="sqlite",
    insert=sqlite.insert,
    writes_in_ctes=False,
    concurrent_writers=False,
    analyze_by_hand=True,
    notifies=False,
    alters_by_copy=True,
    bulk_arrays=False,
)
POSTGRESQL = Capabilities(
    name="postgresql",
    insert=postgresql.insert,
    writes_in_ctes=True,
    concurrent_writers=True,
    analyze_by_hand=False,
    notifies=True,
    alters_by_copy=False,
    bulk_arrays=True,
)
_BY_BACKEND = {c.name: c for c in (SQLITE, POSTGRESQL)}


def for_backend(name: str) -> Capabilities:
    """The capabilities of the backend SQLAlchemy calls ``name``; ``NotImplementedError`` for a
    backend benchrunner does not support."""
    found = _BY_BACKEND.get(name)
    if found is None:
        raise NotImplementedError(f"benchrunner does not run on the {name} database engine")
    return found


def of(conn: Connection | Engine) -> Capabilities:
    """The capabilities ``make_engine`` attached to ``conn``'s engine (``KeyError`` for an
    engine made elsewhere)."""
    found: Capabilities = conn.get_execution_options()[OPTION]
    return found
