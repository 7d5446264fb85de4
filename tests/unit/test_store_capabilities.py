"""Each engine's connections carry that engine's capabilities, whichever engine of the
``Database`` (writer, reader) they come from."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from benchrunner.server.store import capabilities
from benchrunner.server.store.engine import Database, make_engine, normalize_url


def test_every_connection_carries_its_engines_capabilities(database_url: str) -> None:
    backend = sa.make_url(normalize_url(database_url)).get_backend_name()
    expected = {"sqlite": capabilities.SQLITE, "postgresql": capabilities.POSTGRESQL}[backend]
    db = Database(database_url, read_threads=1)
    try:
        assert db.capabilities is expected
        assert db.write_sync(capabilities.of) is expected
        assert db.read_sync(capabilities.of) is expected
        assert capabilities.of(db.write_engine) is expected
    finally:
        db.close()


def test_an_engine_benchrunner_does_not_run_on_is_refused() -> None:
    with pytest.raises(NotImplementedError, match="mysql"):
        make_engine("mysql://user@localhost/benchrunner")


def test_an_engine_made_elsewhere_has_no_capabilities_to_guess() -> None:
    engine = sa.create_engine("sqlite://")
    try:
        with engine.connect() as conn, pytest.raises(KeyError):
            capabilities.of(conn)
    finally:
        engine.dispose()
