"""One contract, two blob stores: the local directory and S3 object storage (a real S3 server,
moto's, on loopback). Every test runs on both; what only object storage does (multipart
uploads, a store that is down) is tested on it alone below."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchrunner.server.blobs.blob_store import (
    BlobStore,
    BlobStoreUnavailable,
    DigestMismatch,
    LocalBlobStore,
    UploadNotFound,
)
from benchrunner.server.blobs.location import check_location, open_blob_store
from benchrunner.server.blobs.s3 import S3BlobStore, S3Location
from tests.object_store import S3Server, StoreGate

KEY = "oci/blobs/sha256/" + "a" * 64
DATA = b"layer bytes " * 1000
SMALL_PARTS = 5 << 20  # S3's least part size: a multipart upload with few bytes


@pytest.fixture(params=["local", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BlobStore]:
    if request.param == "local":
        yield LocalBlobStore(tmp_path / "blobs")
        return
    s3: S3Server = request.getfixturevalue("s3")
    location = S3Location(s3.new_bucket(), "team/blobs")
    yield S3BlobStore(location, s3.client(), part_size=SMALL_PARTS)


def _future() -> float:
    """An ``idle_before`` after every store so far: whatever is stored counts as old (object
    storage keeps its own times, which a test cannot set back)."""
    return time.time() + 60


def test_put_get_size_read_and_delete(store: BlobStore) -> None:
    assert store.get(KEY) is None and store.size(KEY) is None and store.read(KEY) is None
    store.put(KEY, DATA)
    assert store.get(KEY) == DATA
    assert store.size(KEY) == len(DATA)
    chunks = store.read(KEY, chunk_size=1000)
    assert chunks is not None
    parts = list(chunks)
    assert b"".join(parts) == DATA and max(len(p) for p in parts) <= 1000
    ranged = store.read(KEY, 5, 7)
    assert ranged is not None and b"".join(ranged) == DATA[5:12]
    tail = store.read(KEY, len(DATA) - 3)
    assert tail is not None and b"".join(tail) == DATA[-3:]
    empty = store.read(KEY, 0, 0)
    assert empty is not None and list(empty) == []
    store.delete(KEY)
    assert store.get(KEY) is None
    store.delete(KEY)  # deleting a missing blob is no error


def test_keys_that_climb_out_are_refused(store: BlobStore) -> None:
    for key in ("../escape", "a/../../b", "/absolute", "", "a//b"):
        with pytest.raises(ValueError, match="invalid blob key"):
            store.put(key, b"x")


def test_an_upload_in_pieces_is_committed_under_its_digest(store: BlobStore) -> None:
    upload = store.upload_create(["owner1", "owner2"])
    assert store.upload_resume(upload, 0) == 0
    assert store.upload_append(upload, [DATA[:100], DATA[100:5000]]) == 5000
    assert store.upload_append(upload, []) == 5000  # an empty append stores nothing
    assert store.upload_append(upload, [DATA[5000:]]) == len(DATA)
    assert store.upload_resume(upload, 0) == len(DATA)
    assert store.upload_count("owner1") == 1 and store.upload_count("owner3") == 0
    assert store.upload_commit(upload, KEY, hashlib.sha256(DATA).hexdigest()) == len(DATA)
    assert store.get(KEY) == DATA
    with pytest.raises(UploadNotFound):
        store.upload_resume(upload, 0)
    assert store.upload_count("owner1") == 0


@pytest.mark.parametrize("pieces", [1, 2])
def test_a_wrong_digest_stores_nothing_and_keeps_the_upload(store: BlobStore, pieces: int) -> None:
    upload = store.upload_create()
    for piece in (DATA[:10], DATA[10:])[:pieces]:
        store.upload_append(upload, [piece])
    expected = DATA if pieces == 2 else DATA[:10]
    with pytest.raises(DigestMismatch) as refused:
        store.upload_commit(upload, KEY, "0" * 64)
    assert refused.value.actual == hashlib.sha256(expected).hexdigest()
    assert store.get(KEY) is None
    assert store.upload_resume(upload, 0) == len(expected)
    store.upload_abort(upload)
    with pytest.raises(UploadNotFound):
        store.upload_resume(upload, 0)
    store.upload_abort(upload)  # a no-op the second time


def test_an_empty_upload_commits_the_empty_blob(store: BlobStore) -> None:
    upload = store.upload_create()
    assert store.upload_commit(upload, KEY, hashlib.sha256(b"").hexdigest()) == 0
    assert store.get(KEY) == b""


def test_idle_uploads_expire_and_fresh_ones_stay(store: BlobStore) -> None:
    upload = store.upload_create()
    store.upload_append(upload, [b"abc"])
    assert store.upload_resume(upload, time.time() - 60) == 3
    assert store.upload_expire(time.time() - 60) == 0
    assert store.upload_expire(_future()) == 1
    with pytest.raises(UploadNotFound):
        store.upload_resume(upload, time.time() - 60)
    other = store.upload_create()
    with pytest.raises(UploadNotFound):
        store.upload_resume(other, _future())  # idle too long: aborted on the spot
    with pytest.raises(UploadNotFound):
        store.upload_resume(other, 0)


def test_unknown_and_malformed_upload_ids(store: BlobStore) -> None:
    for upload in ("a" * 40, "../../etc", "x/y"):
        with pytest.raises(UploadNotFound):
            store.upload_append(upload, [b"x"])
        with pytest.raises(UploadNotFound):
            store.upload_commit(upload, KEY, "0" * 64)


def test_scan_names_blobs_under_a_prefix_with_sizes_and_times(store: BlobStore) -> None:
    before = time.time() - 1
    store.put(KEY, DATA)
    store.put("oci/other/thing", b"x")
    upload = store.upload_create()
    store.upload_append(upload, [b"staged"])
    found = list(store.scan("oci/blobs"))
    assert [(b.key, b.size) for b in found] == [(KEY, len(DATA))]
    assert before <= found[0].stored <= time.time() + 2


def test_collect_deletes_an_old_unwanted_blob_only(store: BlobStore) -> None:
    store.put(KEY, DATA)
    assert store.collect(KEY, time.time() - 3600, lambda: False) is None  # stored since
    assert store.collect(KEY, _future(), lambda: True) is None  # wanted
    assert store.get(KEY) == DATA
    assert store.collect(KEY, _future(), lambda: False) == len(DATA)
    assert store.get(KEY) is None and list(store.scan("oci")) == []
    assert store.collect(KEY, _future(), lambda: False) is None  # not there


def test_a_store_while_collect_checks_wins(store: BlobStore) -> None:
    store.put(KEY, DATA)

    def stored_meanwhile() -> bool:
        store.put(KEY, DATA)
        return False

    assert store.collect(KEY, _future(), stored_meanwhile) is None
    assert store.get(KEY) == DATA
    assert [b.key for b in store.scan("oci")] == [KEY]  # nothing left aside


def test_a_check_that_fails_puts_the_blob_back(store: BlobStore) -> None:
    store.put(KEY, DATA)

    def database_down() -> bool:
        raise ConnectionError("the database is down")

    with pytest.raises(ConnectionError):
        store.collect(KEY, _future(), database_down)
    assert store.get(KEY) == DATA
    assert store.restore_collecting("oci") == 0  # nothing left aside


# Runs a collection in a process of its own that ends while ``wanted()`` is asked.
_DIES_WHILE_COLLECTING = """
import os, sys, time
from pathlib import Path
from benchrunner.server.blobs.location import open_blob_store
store = open_blob_store(sys.argv[1], Path(sys.argv[2]))
store.collect(sys.argv[3], time.time() + 60, lambda: os._exit(7))
"""


def _location(store: BlobStore) -> str:
    if isinstance(store, LocalBlobStore):
        return str(store.root)
    assert isinstance(store, S3BlobStore)
    return str(store.location)


def test_a_collection_cut_short_is_put_back_by_the_next_one(
    store: BlobStore, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    store.put(KEY, DATA)
    environ = dict(os.environ)
    if isinstance(store, S3BlobStore):
        s3: S3Server = request.getfixturevalue("s3")
        environ.update(s3.env())
    died = subprocess.run(
        [sys.executable, "-c", _DIES_WHILE_COLLECTING, _location(store), str(tmp_path), KEY],
        env=environ,
        check=False,
    )
    assert died.returncode == 7
    assert store.get(KEY) is None  # set aside and not back: unreadable
    assert store.restore_collecting("oci") == 1
    assert store.get(KEY) == DATA
    assert [b.key for b in store.scan("oci")] == [KEY]
    assert store.restore_collecting("oci") == 0


def test_a_link_while_collect_checks_keeps_the_blob(store: BlobStore) -> None:
    """The blob is unreadable while ``wanted()`` runs, and comes back when it is wanted."""
    store.put(KEY, DATA)
    seen: list[bytes | None] = []

    def linked_meanwhile() -> bool:
        seen.append(store.get(KEY))
        return True

    assert store.collect(KEY, _future(), linked_meanwhile) is None
    assert seen == [None]
    assert store.get(KEY) == DATA


# ---------------------------------------------------------------- object storage alone


def _s3_store(s3: S3Server, endpoint: str | None = None) -> tuple[S3BlobStore, str]:
    bucket = s3.new_bucket()
    client = s3.client(endpoint)
    return S3BlobStore(S3Location(bucket, "p"), client, part_size=SMALL_PARTS), bucket


def test_a_large_upload_goes_up_in_parts_and_reads_back_in_chunks(s3: S3Server) -> None:
    store, bucket = _s3_store(s3)
    layer = os.urandom(SMALL_PARTS * 2 + 12345)
    upload = store.upload_create()
    chunks = [layer[i : i + 65536] for i in range(0, len(layer), 65536)]
    assert store.upload_append(upload, iter(chunks)) == len(layer)
    store.upload_append(upload, [b"tail"])  # two pieces: rewritten as one multipart object
    whole = layer + b"tail"
    store.upload_commit(upload, KEY, hashlib.sha256(whole).hexdigest())
    head = s3.client().head_object(Bucket=bucket, Key=f"p/{KEY}")
    assert head["ETag"].strip('"').endswith("-3")  # three parts: 5 MiB, 5 MiB, the rest
    read = store.read(KEY, chunk_size=1 << 20)
    assert read is not None
    parts = list(read)
    assert b"".join(parts) == whole and max(map(len, parts)) <= 1 << 20
    assert s3.keys(bucket) == [f"p/{KEY}"]  # the upload's pieces are gone


def test_a_failing_stream_leaves_no_half_written_piece(s3: S3Server) -> None:
    store, bucket = _s3_store(s3)
    upload = store.upload_create()
    store.upload_append(upload, [b"first"])

    def breaks() -> Iterator[bytes]:
        yield os.urandom(SMALL_PARTS + 10)
        raise ConnectionResetError("client went away")

    with pytest.raises(ConnectionResetError):
        store.upload_append(upload, breaks())
    assert store.upload_resume(upload, 0) == 5
    assert s3.client().list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []


def test_a_store_that_is_down_raises_a_clear_error_and_keeps_what_it_had(s3: S3Server) -> None:
    host, port = s3.endpoint.removeprefix("http://").split(":")
    gate = StoreGate((host, int(port)))
    gate.open()
    store, _ = _s3_store(s3, gate.endpoint)
    store.put(KEY, DATA)
    gate.close()
    try:
        for call in (
            lambda: store.put("other", b"x"),
            lambda: store.get(KEY),
            lambda: store.size(KEY),
            lambda: store.upload_create(),
            lambda: list(store.scan("oci")),
        ):
            with pytest.raises(BlobStoreUnavailable, match=r"blob store s3://.*/p unavailable"):
                call()
    finally:
        gate.open()
    assert store.get(KEY) == DATA and store.size("other") is None


def test_a_missing_bucket_or_bad_location_is_refused_at_the_start(
    s3: S3Server, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name, value in s3.env().items():
        monkeypatch.setenv(name, value)
    with pytest.raises(BlobStoreUnavailable, match=r"s3://no-such-bucket-here/x unavailable"):
        open_blob_store("s3://no-such-bucket-here/x", tmp_path)
    bucket = s3.new_bucket()
    opened = open_blob_store(f"s3://{bucket}/team", tmp_path)
    opened.put(KEY, DATA)
    assert s3.keys(bucket) == [f"team/{KEY}"]
    for bad, problem in [
        ("s3://Bad_Bucket/x", "not a valid S3 bucket name"),
        ("s3://bucket/../x", "invalid blob key"),
        ("gs://bucket/x", "only s3:// URLs or a directory"),
    ]:
        with pytest.raises(ValueError, match=problem):
            check_location(bad)
