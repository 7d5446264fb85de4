"""Whether a server's blob store is the one the other replicas on its database use.

Replicas share their blobs (docs/how-to/deploy.md): a job output one replica stores, another
reads. A replica given another store (no ``--blob-store`` and a data directory of its own, or
another bucket or prefix) would answer "missing" for what the others stored, and two databases
on one store would collect each other's registry blobs as garbage. So the first server to start
on a database names its store: a random identity, kept in the database (``server_state``) and
written into the store under ``IDENTITY_KEY``. Every server that starts later compares the two
and logs a warning naming what to fix when they differ. A store with no identity yet may be
shared with a replica that started at the same moment and is about to write it, so the check
looks again for ``SETTLE`` seconds before it warns. It never stops the server.
"""

from __future__ import annotations

import datetime as dt
import logging
import secrets
import time
from collections.abc import Callable

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from benchrunner.server.blobs.blob_store import BlobStore
from benchrunner.server.store.server_state import server_state_get, server_state_get_or_set
from benchrunner.server.store.tables import server_state

log = logging.getLogger(__name__)

IDENTITY_KEY = "_identity/blob-store"
STATE_NAME = "blob-store"
SETTLE = 3.0
"""Seconds a store with no identity is looked at again before the warning."""


def check_blob_store(
    engine: Engine,
    blobs: BlobStore,
    now: dt.datetime,
    *,
    settle: float = SETTLE,
    monotonic: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> bool:
    """Whether ``blobs`` is the store of the database behind ``engine``; logs a warning when
    not (see the module docstring). Blocking: call it at start-up or off the event loop."""
    candidate = secrets.token_hex(16)
    with engine.begin() as conn:
        expected = server_state_get_or_set(conn, STATE_NAME, candidate, now)
    found = _identity(blobs)
    if expected == candidate:  # the first server on this database
        if found is None:
            blobs.put(IDENTITY_KEY, expected.encode())
            return True
        log.warning(
            "the blob store already belongs to another database (its identity is %s): servers "
            "of two databases on one store collect each other's registry blobs as garbage; "
            "give this database a store of its own",
            found,
        )
        return False
    deadline = monotonic() + settle
    while found is None and monotonic() < deadline:
        sleep(0.2)
        found = _identity(blobs)
    if found == expected:
        return True
    log.warning(
        "this server's blob store is not the one the other servers on its database use (%s, "
        "where they wrote %s): what one stores, the others cannot read. Give every replica the "
        "same --blob-store (BENCHRUNNER_BLOB_STORE), an object store or one shared directory",
        "it holds no identity" if found is None else f"it is {found}",
        expected,
    )
    return False


def name_restored_store(engine: Engine, blobs: BlobStore) -> None:
    """After a restore: give the store the identity its restored database names, unless it has
    one (a bucket the blobs never left). A database of a version before identities names none."""
    if not sa.inspect(engine).has_table(server_state.name):
        return
    with engine.connect() as conn:
        expected = server_state_get(conn, STATE_NAME)
    if expected is not None and _identity(blobs) is None:
        blobs.put(IDENTITY_KEY, expected.encode())


def _identity(blobs: BlobStore) -> str | None:
    data = blobs.get(IDENTITY_KEY)
    return None if data is None else data.decode("ascii", "replace").strip()
