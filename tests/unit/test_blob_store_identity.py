"""A server whose blob store is not its replicas' says so at start: the first server on a
database names its store, and the others compare."""

from __future__ import annotations

import datetime as dt
import logging
from pathlib import Path

import pytest

from benchrunner.server.blobs.blob_store import LocalBlobStore
from benchrunner.server.blobs.identity import IDENTITY_KEY, check_blob_store
from benchrunner.server.store.engine import Database

NOW = dt.datetime(2026, 11, 28, tzinfo=dt.UTC)
LOGGER = "benchrunner.server.blobs.identity"


def test_replicas_on_one_store_agree_and_one_on_its_own_store_is_warned(
    migrated_db: Database, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    engine = migrated_db.write_engine
    shared = LocalBlobStore(tmp_path / "shared")
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert check_blob_store(engine, shared, NOW)  # the first names it
        assert shared.get(IDENTITY_KEY)
        assert check_blob_store(engine, LocalBlobStore(tmp_path / "shared"), NOW, settle=0)
        assert not caplog.text
        own = LocalBlobStore(tmp_path / "own")
        assert not check_blob_store(engine, own, NOW, settle=0)
    assert "not the one the other servers on its database use (it holds no identity" in caplog.text
    assert own.get(IDENTITY_KEY) is None  # nothing claimed in the wrong store


def test_a_store_whose_identity_arrives_while_it_settles_passes(
    migrated_db: Database, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A replica that started at the same moment as the first writes the identity late."""
    engine = migrated_db.write_engine
    assert check_blob_store(engine, LocalBlobStore(tmp_path / "first"), NOW)
    late = LocalBlobStore(tmp_path / "late")
    identity = LocalBlobStore(tmp_path / "first").get(IDENTITY_KEY)
    assert identity is not None
    clock = [0.0]

    def sleep(seconds: float) -> None:
        clock[0] += seconds
        if clock[0] > 1:
            late.put(IDENTITY_KEY, identity)

    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert check_blob_store(engine, late, NOW, monotonic=lambda: clock[0], sleep=sleep)
    assert not caplog.text


def test_a_store_of_another_database_is_warned_of_and_kept(
    migrated_db: Database, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = LocalBlobStore(tmp_path / "store")
    store.put(IDENTITY_KEY, b"0123456789abcdef")  # named by another database's first server
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert not check_blob_store(migrated_db.write_engine, store, NOW)
    assert "already belongs to another database (its identity is 0123456789abcdef)" in caplog.text
    assert store.get(IDENTITY_KEY) == b"0123456789abcdef"
