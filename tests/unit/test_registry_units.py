"""Pure parts of the registry: the blob store's uploads, manifest parsing, token scopes."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import pytest

from benchrunner.server.blobs.blob_store import DigestMismatch, LocalBlobStore, UploadNotFound
from benchrunner.server.registry import manifests, references
from benchrunner.server.registry.access import Scope
from benchrunner.server.registry.errors import RegistryError

D1 = "sha256:" + "1" * 64
D2 = "sha256:" + "2" * 64


def test_upload_appends_then_commits_under_its_digest(tmp_path: Path) -> None:
    store = LocalBlobStore(tmp_path)
    upload = store.upload_create()
    assert store.upload_append(upload, [b"abc", b""]) == 3
    assert store.upload_append(upload, iter([b"def"])) == 6
    assert store.upload_resume(upload, 0) == 6
    with pytest.raises(DigestMismatch):
        store.upload_commit(upload, "oci/x", "0" * 64)
    assert store.upload_resume(upload, 0) == 6  # kept: the client may append more or abort
    assert store.upload_commit(upload, "oci/x", hashlib.sha256(b"abcdef").hexdigest()) == 6
    assert store.get("oci/x") == b"abcdef"
    assert store.size("oci/x") == 6
    chunks = store.read("oci/x", chunk_size=4)
    assert chunks is not None and list(chunks) == [b"abcd", b"ef"]
    part = store.read("oci/x", 1, 4, chunk_size=3)
    assert part is not None and list(part) == [b"bcd", b"e"]
    with pytest.raises(UploadNotFound):
        store.upload_resume(upload, 0)


def test_unknown_or_malformed_upload_ids_are_not_found(tmp_path: Path) -> None:
    store = LocalBlobStore(tmp_path)
    for upload in ("nope", "../etc", "", "\u00e9t\u00e9", "\u0661\u0662", "a" * 201):
        with pytest.raises(UploadNotFound):
            store.upload_append(upload, [b"x"])
    store.upload_abort("../etc")
    assert store.read("missing") is None and store.size("missing") is None


def test_idle_uploads_expire(tmp_path: Path) -> None:
    store = LocalBlobStore(tmp_path)
    idle, busy = store.upload_create(), store.upload_create()
    staged = tmp_path / "_uploads" / idle
    os.utime(staged, (staged.stat().st_atime, staged.stat().st_mtime - 7200))
    assert store.upload_expire(time.time() - 3600) == 1
    with pytest.raises(UploadNotFound):
        store.upload_resume(idle, 0)
    assert store.upload_resume(busy, 0) == 0


def test_an_idle_upload_cannot_be_resumed_and_a_resumed_one_is_touched(tmp_path: Path) -> None:
    store = LocalBlobStore(tmp_path)
    idle, used = store.upload_create(), store.upload_create()
    for upload in (idle, used):
        staged = tmp_path / "_uploads" / upload
        os.utime(staged, (0, time.time() - 7200))
    store.upload_append(used, [b"abc"])  # an append is a use
    with pytest.raises(UploadNotFound):
        store.upload_resume(idle, time.time() - 3600)
    assert not (tmp_path / "_uploads" / idle).exists()
    assert store.upload_resume(used, time.time() - 3600) == 3


def test_uploads_are_counted_by_owner(tmp_path: Path) -> None:
    store = LocalBlobStore(tmp_path)
    first = store.upload_create(["repo1", "alice"])
    store.upload_create(["repo1", "bob"])
    store.upload_create(["repo2", "alice"])
    store.upload_create()
    assert [store.upload_count(o) for o in ("repo1", "repo2", "alice", "bob")] == [2, 1, 2, 1]
    store.upload_abort(first)
    assert store.upload_count("repo1") == store.upload_count("alice") == 1
    with pytest.raises(ValueError, match="owners"):
        store.upload_create(["no_underscores"])


def _manifest(**fields: object) -> bytes:
    return json.dumps({"schemaVersion": 2, **fields}).encode()


CONFIG = {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": D1, "size": 2}
LAYER = {"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": D2, "size": 9}


def test_image_manifest_refers_to_config_and_layers() -> None:
    parsed = manifests.parse(
        _manifest(config=CONFIG, layers=[LAYER], subject={**LAYER, "digest": D1}),
        manifests.OCI_MANIFEST,
    )
    assert parsed.blobs == [D1, D2]
    assert parsed.manifests == []
    assert parsed.subject == D1
    assert parsed.artifact_type == CONFIG["mediaType"]


def test_index_refers_to_manifests() -> None:
    parsed = manifests.parse(
        _manifest(mediaType=manifests.DOCKER_LIST, manifests=[{**LAYER, "digest": D2}]), None
    )
    assert parsed.media_type == manifests.DOCKER_LIST
    assert parsed.manifests == [D2]


@pytest.mark.parametrize(
    ("content", "content_type", "message"),
    [
        (b"{", manifests.OCI_MANIFEST, "not JSON"),
        (b"[]", manifests.OCI_MANIFEST, "JSON object"),
        (json.dumps({"schemaVersion": 1}).encode(), None, "schemaVersion 2"),
        (_manifest(config=CONFIG, layers=[]), "text/plain", "unsupported manifest media type"),
        (_manifest(config=CONFIG), manifests.OCI_MANIFEST, "layers list"),
        (_manifest(config={"digest": D1}, layers=[]), manifests.OCI_MANIFEST, "size"),
        (
            _manifest(mediaType=manifests.OCI_INDEX, manifests=[]),
            manifests.OCI_MANIFEST,
            "differs",
        ),
    ],
)
def test_invalid_manifests_say_why(content: bytes, content_type: str | None, message: str) -> None:
    with pytest.raises(RegistryError) as raised:
        manifests.parse(content, content_type)
    assert raised.value.code == "MANIFEST_INVALID"
    assert message in raised.value.message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("repository:bench:pull", Scope("bench", frozenset({"pull"}))),
        ("repository:bench:pull,push,nope", Scope("bench", frozenset({"pull", "push"}))),
        ("repository:bench:*", Scope("bench", frozenset({"pull", "push", "delete"}))),
        ("repository:bench:", Scope("bench", frozenset())),
        ("registry:catalog:*", None),
        ("repository::pull", None),
    ],
)
def test_scopes(text: str, expected: Scope | None) -> None:
    assert Scope.parse(text) == expected


@pytest.mark.parametrize(
    ("name", "valid"),
    [
        ("bench", True),
        ("b", True),
        ("my-bench.v2_x__y---z", True),
        ("0b1c6d1e-2f3a-4b5c-8d9e-0f1a2b3c4d5e", True),
        ("a" * 255, True),
        ("a" * 256, False),
        ("", False),
        ("Bench", False),
        ("a..b", False),
        ("a___b", False),
        ("-bench", False),
        ("bench-", False),
        ("acme/bench", False),  # a path of components: no route takes one
        ("b\u00e9nch", False),
        ("\u2603", False),
        ("a\x00b", False),
        ("a\nb", False),
        ("a b", False),
        ("\u0661", False),  # a digit to str.isdigit, not to the grammar
    ],
)
def test_repository_names_follow_the_spec_grammar(name: str, valid: bool) -> None:
    assert references.is_name(name) is valid
    if not valid:
        with pytest.raises(RegistryError) as refused:
            references.check_name(name)
        assert refused.value.code == "NAME_INVALID"
