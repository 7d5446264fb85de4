"""The server's secret key: it signs registry and pull tokens (JWT), registry upload locations
and the console's CSRF tokens, and keys anonymous projects' slugs, so every replica must use
the same one.

``--secret-key`` (``BENCHRUNNER_SECRET_KEY``) when set. Otherwise the key kept in the database:
the first server to start on it generates one and stores it, and every replica reads that one,
so replicas that share the database agree with no file and no setting shared. A data directory
of an older version may hold its generated key in ``secret_key``: when the database has no key
yet, that one is stored, so the tokens signed before the upgrade stay valid.
"""

from __future__ import annotations

import datetime as dt
import logging
import secrets
from pathlib import Path

from sqlalchemy.engine import Engine

from benchrunner.server.store.server_state import server_state_get, server_state_get_or_set

log = logging.getLogger(__name__)

SECRET_NAME = "signing-key"  # noqa: S105 (the row's name, not a key)
KEY_FILE = "secret_key"
"""Where versions before the key moved into the database generated it, under the data dir."""


def load_secret_key(
    engine: Engine, data_dir: Path, configured: str | None, now: dt.datetime
) -> str:
    """The key this server signs with (see the module docstring)."""
    if configured:
        return configured
    path = data_dir / KEY_FILE
    with engine.begin() as conn:
        stored = server_state_get(conn, SECRET_NAME)
    if stored is None:
        candidate = _legacy_key(path) or secrets.token_hex(32)
        with engine.begin() as conn:
            return server_state_get_or_set(conn, SECRET_NAME, candidate, now)
    if path.exists() and path.read_text().strip() != stored:
        log.warning(
            "%s holds another key than the database's, which every replica uses; the file is "
            "no longer read and can be deleted",
            path,
        )
    return stored


def _legacy_key(path: Path) -> str | None:
    """The key an older version generated into ``path``, if any."""
    try:
        key = path.read_text().strip()
    except FileNotFoundError:
        return None
    if not key:
        raise RuntimeError(
            f"the secret key file {path} is empty; delete it to have a new key generated "
            "(tokens signed with the old key stop working)"
        )
    return key
