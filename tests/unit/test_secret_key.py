"""The server's signing key: kept in the database, so replicas that share nothing else (each its
own data directory) agree on it; a key an older version left in a data directory is kept."""

from __future__ import annotations

import datetime as dt
import logging
import threading
from pathlib import Path

import pytest

from benchrunner.server.secret_key import KEY_FILE, load_secret_key
from benchrunner.server.store.engine import Database

REPLICAS = 6
NOW = dt.datetime(2026, 11, 28, tzinfo=dt.UTC)


def _start_together(database_url: str, data_dirs: list[Path]) -> list[str]:
    """Each replica's key, each loaded on an engine of its own from its own data directory."""
    barrier = threading.Barrier(len(data_dirs))
    keys: list[str] = []
    errors: list[BaseException] = []

    def replica(data_dir: Path) -> None:
        database = Database(database_url, read_threads=1)
        try:
            barrier.wait(timeout=30)
            keys.append(load_secret_key(database.write_engine, data_dir, None, NOW))
        except BaseException as exc:
            errors.append(exc)
        finally:
            database.close()

    threads = [threading.Thread(target=replica, args=(d,)) for d in data_dirs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors, errors
    return keys


def test_replicas_with_their_own_data_directories_agree_on_one_key(
    migrated_db: Database, database_url: str, tmp_path: Path
) -> None:
    data_dirs = [tmp_path / f"replica-{i}" for i in range(REPLICAS)]
    keys = _start_together(database_url, data_dirs)
    assert len(keys) == REPLICAS
    assert len(set(keys)) == 1, f"{len(set(keys))} different keys"
    (key,) = set(keys)
    assert len(key) == 64
    assert not any(d.exists() for d in data_dirs)  # nothing written to any data directory
    # A replica started later, anywhere, gets the same key.
    assert load_secret_key(migrated_db.write_engine, tmp_path / "late", None, NOW) == key


def test_an_older_data_directorys_key_is_kept_and_a_configured_one_wins(
    migrated_db: Database, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    engine = migrated_db.write_engine
    (tmp_path / KEY_FILE).write_text("key-of-an-older-version\n")
    assert load_secret_key(engine, tmp_path, None, NOW) == "key-of-an-older-version"
    assert load_secret_key(engine, tmp_path / "other", None, NOW) == "key-of-an-older-version"
    assert load_secret_key(engine, tmp_path, "configured", NOW) == "configured"
    # Another data directory's own old key is not used: the database's is every replica's.
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / KEY_FILE).write_text("another-key")
    with caplog.at_level(logging.WARNING, logger="benchrunner.server.secret_key"):
        assert load_secret_key(engine, tmp_path / "other", None, NOW) == "key-of-an-older-version"
    assert "holds another key than the database's" in caplog.text
    assert "another-key" not in caplog.text and "key-of-an-older-version" not in caplog.text


def test_an_empty_key_file_is_refused_not_used(migrated_db: Database, tmp_path: Path) -> None:
    (tmp_path / KEY_FILE).write_text("")
    with pytest.raises(RuntimeError, match="is empty; delete it"):
        load_secret_key(migrated_db.write_engine, tmp_path, None, NOW)
