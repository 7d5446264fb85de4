"""``LocalBlobStore.collect``: a blob is deleted only when it is old and unwanted, and a store of
the same key meanwhile always wins."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

from benchrunner.server.blobs.blob_store import LocalBlobStore

KEY = "oci/blobs/sha256/" + "a" * 64
DATA = b"layer bytes"
LONG_AGO = time.time() - 3600


def _store(tmp_path: Path) -> LocalBlobStore:
    store = LocalBlobStore(tmp_path)
    store.put(KEY, DATA)
    os.utime(store.root / KEY, (LONG_AGO, LONG_AGO))
    return store


def test_an_old_unwanted_blob_is_deleted_and_its_size_returned(tmp_path: Path) -> None:
    store = _store(tmp_path)
    assert [b.key for b in store.scan("oci/blobs")] == [KEY]
    assert store.collect(KEY, time.time() - 60, lambda: False) == len(DATA)
    assert store.get(KEY) is None and list(store.scan("oci/blobs")) == []


def test_a_wanted_or_recent_blob_is_kept(tmp_path: Path) -> None:
    store = _store(tmp_path)
    assert store.collect(KEY, time.time() - 60, lambda: True) is None
    assert store.get(KEY) == DATA
    assert store.collect(KEY, LONG_AGO - 60, lambda: False) is None  # stored after the cutoff
    assert store.get(KEY) == DATA
    assert store.collect("oci/blobs/sha256/" + "b" * 64, time.time(), lambda: False) is None


def test_storing_the_key_again_refreshes_it(tmp_path: Path) -> None:
    store = _store(tmp_path)
    upload = store.upload_create()
    store.upload_append(upload, [DATA])
    store.upload_commit(upload, KEY, hashlib.sha256(DATA).hexdigest())
    assert store.collect(KEY, time.time() - 60, lambda: False) is None
    assert store.get(KEY) == DATA


def test_a_store_while_the_check_runs_wins(tmp_path: Path) -> None:
    store = _store(tmp_path)

    def stored_meanwhile() -> bool:
        store.put(KEY, DATA)  # a writer stores the key while it is set aside
        return False

    assert store.collect(KEY, time.time() - 60, stored_meanwhile) is None
    assert store.get(KEY) == DATA
    assert [b.key for b in store.scan("oci/blobs")] == [KEY]  # nothing left aside
