"""The fallback spec in the store: the one ``POST /v0/run`` without a spec may use."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import pytest
from sqlalchemy.engine import Engine

from benchrunner.server.store import runners
from benchrunner.server.store.engine import make_engine
from tests.databases import with_schema

NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


@pytest.fixture
def engine(database_url: str) -> Iterator[Engine]:
    """Both engines: spec_lock_all's FOR UPDATE only locks on PostgreSQL."""
    with_schema(database_url)
    engine = make_engine(database_url)
    yield engine
    engine.dispose()


def test_the_fallback_is_the_one_marked_last_and_never_archived(engine: Engine) -> None:
    with engine.begin() as conn:
        assert runners.spec_fallback(conn) is None
        a, b = (
            runners.spec_create(conn, runners.NewSpec(name, "x86_64", 1, 1, 1, False), NOW)
            for name in ("a", "b")
        )
        runners.spec_lock_all(conn)
        assert runners.spec_set_fallback(conn, a.id, True, NOW).fallback == NOW
        assert runners.spec_fallback(conn).slug == "a"
        later = NOW + dt.timedelta(seconds=1)
        runners.spec_set_fallback(conn, b.id, True, later)
        assert runners.spec_fallback(conn).slug == "b"
        assert runners.spec_by_id(conn, a.id).fallback is None
        assert runners.spec_json(runners.spec_by_id(conn, b.id)).fallback == later
        runners.spec_update(conn, b.id, {"archived": later})
        assert runners.spec_fallback(conn) is None  # archived specs take no new jobs
