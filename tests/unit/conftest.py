"""Fixtures of the unit tests beyond the engines' (``tests/conftest.py``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy.engine import Engine

from benchrunner.server.store.engine import Database, make_engine
from tests.databases import with_schema
from tests.unit.test_claim_policy import World


@pytest.fixture
def world(database_url: str) -> Iterator[World]:
    """A ``World`` of the store's helpers on a fresh database of each engine in turn (a module
    may define a ``world`` of its own, which takes its place there)."""
    with_schema(database_url)
    db = Database(database_url)
    yield World(db)
    db.close()


@pytest.fixture
def engine(database_url: str) -> Iterator[Engine]:
    """An engine (SQLite's a writer's) on a fresh database of each engine in turn, every
    migration applied, disposed after the test."""
    with_schema(database_url)
    made = make_engine(database_url)
    yield made
    made.dispose()
