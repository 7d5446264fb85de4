"""The fallback spec in the store: the one ``POST /v0/run`` without a spec may use."""

from __future__ import annotations

import datetime as dt

from sqlalchemy.engine import Engine

from benchrunner.server.store import runners

NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


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
