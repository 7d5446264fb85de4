"""Backup and restore of a server: its database, its blob store's manifest, and its key.

A backup is a directory:

- ``benchrunner.db`` (SQLite, copied with SQLite's online backup: consistent while the server
  runs) or ``database.pgdump`` (PostgreSQL, ``pg_dump --format=custom``: one snapshot);
- ``blobs.jsonl``, the manifest: one ``{"key", "size"}`` line per blob the store held just after
  the database was copied, so every blob the copy refers to is listed (a blob is stored before
  the row that names it);
- ``blobs/``, the blobs' bytes when they live in a directory. Blobs in object storage stay in
  their bucket (its versioning or replication is their backup): a restore checks the manifest
  against the store it is given;
- ``secret_key``, the signing key file an older version generated into the data directory, when
  there is one (the key is a row of the database now, copied with it: ``server.secret_key``).

``restore`` puts these into an empty database and a data directory (and blob store) on any
machine, then checks that every blob of the manifest is there with its size. Errors are
``BackupError`` with one line naming the problem.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa

from benchrunner.server.blobs.blob_store import READ_CHUNK, BlobStore, LocalBlobStore
from benchrunner.server.blobs.identity import IDENTITY_KEY, name_restored_store
from benchrunner.server.blobs.location import open_blob_store
from benchrunner.server.secret_key import KEY_FILE
from benchrunner.server.store.engine import make_engine

SQLITE_FILE = "benchrunner.db"
PG_DUMP_FILE = "database.pgdump"
MANIFEST = "blobs.jsonl"
BLOBS = "blobs"
# Uploads in progress are not part of a backup; the store's identity is the database's, which
# a restore writes into the store it fills (``blob_store_identity``).
_SKIPPED = ("_uploads", "_collecting", IDENTITY_KEY.split("/")[0])


class BackupError(ValueError):
    """What stops a backup or restore, in one line."""


@dataclass(frozen=True)
class Restored:
    blobs: int
    missing: list[str]
    """Keys of the manifest the restored store lacks (or holds with another size)."""


def _sqlite_path(url: str) -> Path | None:
    parsed = sa.make_url(url)
    if parsed.get_backend_name() != "sqlite":
        return None
    if not parsed.database:
        raise BackupError(f"{url}: an in-memory SQLite database has nothing to back up")
    return Path(parsed.database)


def _pg_url(url: str) -> str:
    """The libpq URL of a SQLAlchemy URL (``postgresql+psycopg://`` -> ``postgresql://``)."""
    return sa.make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def _run(argv: list[str], what: str) -> None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=3600, check=False)
    except FileNotFoundError:
        raise BackupError(f"{argv[0]} is not installed: {what} needs it") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise BackupError(f"{what} failed ({argv[0]} exited {done.returncode}): {last}")


def _stored_keys(store: BlobStore) -> Iterator[tuple[str, int]]:
    if isinstance(store, LocalBlobStore):
        tops = [p.name for p in store.root.iterdir() if p.is_dir() and p.name not in _SKIPPED]
    else:
        tops = _object_tops(store)
    for top in sorted(tops):
        for blob in store.scan(top):
            yield blob.key, blob.size


def _object_tops(store: BlobStore) -> list[str]:
    """The first parts of every key in an object store (projects' UUIDs, ``oci``, ...)."""
    from benchrunner.server.blobs.s3 import S3BlobStore

    assert isinstance(store, S3BlobStore)
    return sorted(store.top_level() - set(_SKIPPED))


def backup(db_url: str, data_dir: Path, blob_store: str | None, out: Path) -> int:
    """Write a backup of the server to ``out`` (a new or empty directory); the blobs listed."""
    if out.exists() and any(out.iterdir()):
        raise BackupError(f"{out} is not empty: back up into a new directory")
    out.mkdir(parents=True, exist_ok=True)
    sqlite_file = _sqlite_path(db_url)
    if sqlite_file is not None:
        if not sqlite_file.exists():
            raise BackupError(f"{sqlite_file} does not exist")
        source = sqlite3.connect(f"file:{sqlite_file}?mode=ro", uri=True)
        target = sqlite3.connect(out / SQLITE_FILE)
        try:
            source.backup(target)
        finally:
            target.close()
            source.close()
    else:
        dump = out / PG_DUMP_FILE
        _run(["pg_dump", "--format=custom", f"--file={dump}", _pg_url(db_url)], "pg_dump")
    store = open_blob_store(blob_store, data_dir)
    copy_bytes = isinstance(store, LocalBlobStore)
    count = 0
    with (out / MANIFEST).open("w") as manifest:
        for key, size in _stored_keys(store):
            manifest.write(json.dumps({"key": key, "size": size}) + "\n")
            count += 1
            if copy_bytes:
                assert isinstance(store, LocalBlobStore)
                target_path = out / BLOBS / key
                target_path.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(store.root / key, target_path)
    secret = data_dir / KEY_FILE
    if secret.exists():
        shutil.copyfile(secret, out / KEY_FILE)
        (out / KEY_FILE).chmod(0o600)
    return count


def restore(source: Path, db_url: str, data_dir: Path, blob_store: str | None) -> Restored:
    """Restore the backup in ``source`` into the empty database ``db_url`` and ``data_dir``."""
    manifest_path = source / MANIFEST
    if not manifest_path.exists():
        raise BackupError(f"{source} is not a benchrunner backup (no {MANIFEST})")
    data_dir.mkdir(parents=True, exist_ok=True)
    sqlite_file = _sqlite_path(db_url)
    if sqlite_file is not None:
        if not (source / SQLITE_FILE).exists():
            raise BackupError(f"{source} holds a PostgreSQL dump: restore it to postgresql://")
        if sqlite_file.exists():
            raise BackupError(f"{sqlite_file} exists: restore into a new database")
        sqlite_file.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / SQLITE_FILE, sqlite_file)
    else:
        if not (source / PG_DUMP_FILE).exists():
            raise BackupError(f"{source} holds a SQLite database: restore it to sqlite:///")
        dump = str(source / PG_DUMP_FILE)
        _run(
            ["pg_restore", "--no-owner", "--exit-on-error", f"--dbname={_pg_url(db_url)}", dump],
            "pg_restore",
        )
    if (source / KEY_FILE).exists() and not (data_dir / KEY_FILE).exists():
        shutil.copyfile(source / KEY_FILE, data_dir / KEY_FILE)
        (data_dir / KEY_FILE).chmod(0o600)
    store = open_blob_store(blob_store, data_dir)
    entries = [json.loads(line) for line in manifest_path.read_text().splitlines() if line]
    missing = []
    for entry in entries:
        key, size = str(entry["key"]), int(entry["size"])
        copied = source / BLOBS / key
        if copied.exists() and store.size(key) is None:
            _put_file(store, key, copied)
        if store.size(key) != size:
            missing.append(key)
    engine = make_engine(db_url, writer=True)
    try:
        name_restored_store(engine, store)
    finally:
        engine.dispose()
    return Restored(len(entries), missing)


def _put_file(store: BlobStore, key: str, path: Path) -> None:
    """Store a file under ``key``, streamed (a layer need not fit in memory)."""
    hasher = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(READ_CHUNK):
            hasher.update(chunk)
    upload = store.upload_create()
    with path.open("rb") as handle:
        store.upload_append(upload, iter(lambda: handle.read(READ_CHUNK), b""))
    store.upload_commit(upload, key, hasher.hexdigest())
