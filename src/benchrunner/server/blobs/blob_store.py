"""The blob store: job outputs and OCI image blobs. Local directory by default.

Keys are relative POSIX paths such as ``{project_uuid}/output/v0/jobs/{job_uuid}``. A ``put``
returns only once the bytes are durable (fsync), so an ``ack`` sent after it means the output
survives a crash.

Large blobs (image layers up to the registry's body limit) never pass through memory whole: they
are written through an *upload* (``upload_create``, any number of ``upload_append`` calls, then
``upload_commit`` under a key, which checks the SHA-256 of everything appended) and read back with
``read`` in chunks. The local store keeps an upload as a staging file under ``_uploads/``;
object storage keeps it as objects under ``_uploads/`` (``s3_blobs``). Every operation is
blocking: call them off the event loop. Object storage raises ``BlobStoreUnavailable`` when
it cannot be reached (the local directory's own failures are ``OSError``).

An upload may carry *owners* (short labels such as a hash of its repository), which
``upload_count`` counts so that callers can cap open uploads. The local store writes them into
the staging file's name, so the count is one directory listing and holds for every server
sharing the directory. An upload is *idle* since its last append or ``upload_resume``; times
are POSIX timestamps, compared with the staging file's modification time.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO, Protocol

READ_CHUNK = 1 << 20
_UPLOADS = "_uploads"
_ASIDE = ".collecting-"
_TOKEN_BYTES = 8
_UPLOAD_ID = re.compile(r"[A-Za-z0-9_-]{1,200}")
_OWNER = re.compile(r"[0-9a-z]{1,64}")


class DigestMismatch(Exception):
    """The bytes of an upload do not hash to the digest the client named."""

    def __init__(self, expected: str, actual: str) -> None:
        super().__init__(f"content hashes to sha256:{actual}, not sha256:{expected}")
        self.expected = expected
        self.actual = actual


class UploadNotFound(Exception):
    """No upload with this id: never created, already committed, or aborted."""


class BlobStoreUnavailable(Exception):
    """The blob store cannot be reached or refused the operation (object storage down, bad
    credentials, missing bucket). Nothing was stored by the failed call; what was stored
    before it stays."""


def check_key(key: str) -> None:
    """``ValueError`` unless ``key`` is a relative POSIX path with no ``..`` or empty part."""
    parts = key.split("/")
    if not key or any(p in ("..", ".", "") for p in parts):
        raise ValueError(f"invalid blob key {key!r}")


def check_owners(owners: Sequence[str]) -> None:
    if not all(_OWNER.fullmatch(owner) for owner in owners):
        raise ValueError(f"invalid upload owners {owners!r}")


def check_upload_id(upload_id: str) -> None:
    """``UploadNotFound`` for an id no store could have made."""
    if _UPLOAD_ID.fullmatch(upload_id) is None:
        raise UploadNotFound(upload_id)


class BlobStore(Protocol):
    def put(self, key: str, data: bytes) -> None: ...
    def get(self, key: str) -> bytes | None: ...
    def delete(self, key: str) -> None: ...

    def size(self, key: str) -> int | None:
        """The size of the blob under ``key`` in bytes, or None when there is none."""
        ...

    def read(
        self, key: str, offset: int = 0, length: int | None = None, chunk_size: int = READ_CHUNK
    ) -> Iterator[bytes] | None:
        """The blob's bytes from ``offset`` (``length`` of them, else to the end) in chunks of
        at most ``chunk_size``, or None when there is no such blob."""
        ...

    def upload_create(self, owners: Sequence[str] = ()) -> str:
        """Start an empty upload owned by ``owners`` (each ``[0-9a-z]+``) and return its id
        (URL-safe, unguessable)."""
        ...

    def upload_count(self, owner: str) -> int:
        """How many uploads ``owner`` has."""
        ...

    def upload_resume(self, upload_id: str, idle_before: float) -> int:
        """Mark the upload as used now and return its size; ``UploadNotFound`` when there is
        none or it was idle since before ``idle_before`` (it is then aborted)."""
        ...

    def upload_append(self, upload_id: str, chunks: Iterable[bytes]) -> int:
        """Append the chunks, durably, and return the new size; raises ``UploadNotFound``."""
        ...

    def upload_commit(self, upload_id: str, key: str, sha256_hex: str) -> int:
        """Store the upload under ``key`` if its SHA-256 is ``sha256_hex`` and return its size.

        Raises ``DigestMismatch`` (the upload is kept, so the client may append more or abort)
        or ``UploadNotFound``. When ``key`` already holds a blob the upload is simply dropped:
        keys of content-addressed blobs name their bytes.
        """
        ...

    def upload_abort(self, upload_id: str) -> None:
        """Forget the upload and its bytes; a no-op for an unknown id."""
        ...

    def upload_expire(self, idle_before: float) -> int:
        """Abort the uploads idle since before ``idle_before``; how many."""
        ...

    def scan(self, prefix: str) -> Iterator[StoredBlob]:
        """The blobs whose keys start with ``prefix`` + ``/``, in no particular order."""
        ...

    def collect(self, key: str, idle_before: float, wanted: Callable[[], bool]) -> int | None:
        """Delete the blob under ``key`` if it was last stored before ``idle_before`` and
        ``wanted()``, asked once the blob can no longer be read, says no; the bytes freed, or
        None when the blob was kept (or was not there).

        Safe against a writer storing the same key meanwhile: storing an existing key marks
        it as stored now (see ``upload_commit``), and a blob stored while the check runs is
        the writer's, not deleted. An object store, which cannot set a blob aside atomically,
        may still delete a blob stored in the instant between its time check and its delete
        when the writer's link comes after ``wanted()``: a writer that links a blob it stored
        checks that the blob is still there afterwards."""
        ...

    def restore_collecting(self, prefix: str) -> int:
        """Put back every blob under ``prefix`` + ``/`` that a collection set aside and did not
        finish with (its process ended midway): each under its key unless stored there anew.
        How many came back."""
        ...


@dataclass(frozen=True)
class StoredBlob:
    key: str
    size: int
    stored: float
    """When its bytes were last stored (POSIX time)."""


def job_output_key(project_uuid: object, job_uuid: object) -> str:
    return f"{project_uuid}/output/v0/jobs/{job_uuid}"


def _put_back(aside: Path, path: Path) -> None:
    """The blob set aside by a collection back under its key, unless stored there anew."""
    if path.exists():
        aside.unlink(missing_ok=True)
    else:
        aside.rename(path)


def _fsync_dir(path: Path) -> None:
    dir_fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


class LocalBlobStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        (root / _UPLOADS).mkdir(exist_ok=True)

    def _path(self, key: str) -> Path:
        check_key(key)
        return self.root.joinpath(*PurePosixPath(key).parts)

    def put(self, key: str, data: bytes) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            Path(tmp).replace(path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        _fsync_dir(path.parent)

    def get(self, key: str) -> bytes | None:
        try:
            return self._path(key).read_bytes()
        except FileNotFoundError:
            return None

    def delete(self, key: str) -> None:
        self._path(key).unlink(missing_ok=True)

    def size(self, key: str) -> int | None:
        try:
            return self._path(key).stat().st_size
        except FileNotFoundError:
            return None

    def read(
        self, key: str, offset: int = 0, length: int | None = None, chunk_size: int = READ_CHUNK
    ) -> Iterator[bytes] | None:
        try:
            handle = self._path(key).open("rb")
        except FileNotFoundError:
            return None
        handle.seek(offset)
        return _chunks(handle, chunk_size, limit=length)

    def _upload_path(self, upload_id: str) -> Path:
        check_upload_id(upload_id)
        return self.root / _UPLOADS / upload_id

    def upload_create(self, owners: Sequence[str] = ()) -> str:
        check_owners(owners)
        upload_id = "_".join([*owners, secrets.token_hex(16)])
        self._upload_path(upload_id).touch(exist_ok=False)
        return upload_id

    def upload_count(self, owner: str) -> int:
        staged = (self.root / _UPLOADS).iterdir()
        return sum(owner in path.name.split("_")[:-1] for path in staged)

    def upload_resume(self, upload_id: str, idle_before: float) -> int:
        path = self._upload_path(upload_id)
        try:
            status = path.stat()
            if status.st_mtime < idle_before:
                path.unlink()
                raise UploadNotFound(upload_id)
            os.utime(path)
        except FileNotFoundError:
            raise UploadNotFound(upload_id) from None
        return status.st_size

    def upload_append(self, upload_id: str, chunks: Iterable[bytes]) -> int:
        try:
            handle = self._upload_path(upload_id).open("r+b")
        except FileNotFoundError:
            raise UploadNotFound(upload_id) from None
        with handle:
            handle.seek(0, os.SEEK_END)
            for chunk in chunks:
                handle.write(chunk)
            handle.flush()
            os.fsync(handle.fileno())
            return handle.tell()

    def upload_commit(self, upload_id: str, key: str, sha256_hex: str) -> int:
        staged = self._upload_path(upload_id)
        hasher = hashlib.sha256()
        try:
            handle = staged.open("rb")
        except FileNotFoundError:
            raise UploadNotFound(upload_id) from None
        with handle:
            size = 0
            for chunk in _chunks(handle, READ_CHUNK, close=False):
                hasher.update(chunk)
                size += len(chunk)
        if hasher.hexdigest() != sha256_hex:
            raise DigestMismatch(sha256_hex, hasher.hexdigest())
        path = self._path(key)
        if path.exists():
            # Stored again now: garbage collection, which judges a blob by this time, spares it.
            with contextlib.suppress(FileNotFoundError):
                os.utime(path)
                staged.unlink(missing_ok=True)
                return size
        path.parent.mkdir(parents=True, exist_ok=True)
        staged.replace(path)
        _fsync_dir(path.parent)
        return size

    def upload_abort(self, upload_id: str) -> None:
        with contextlib.suppress(UploadNotFound):
            self._upload_path(upload_id).unlink(missing_ok=True)

    def upload_expire(self, idle_before: float) -> int:
        expired = 0
        for staged in (self.root / _UPLOADS).iterdir():
            with contextlib.suppress(FileNotFoundError):  # committed or aborted meanwhile
                if staged.stat().st_mtime < idle_before:
                    staged.unlink()
                    expired += 1
        return expired

    def scan(self, prefix: str) -> Iterator[StoredBlob]:
        top = self._path(prefix)
        for path in top.rglob("*"):
            if path.name.startswith((".tmp-", _ASIDE)):
                continue
            with contextlib.suppress(FileNotFoundError):
                status = path.stat()
                if path.is_file():
                    key = path.relative_to(self.root).as_posix()
                    yield StoredBlob(key, status.st_size, status.st_mtime)

    def collect(self, key: str, idle_before: float, wanted: Callable[[], bool]) -> int | None:
        path = self._path(key)
        aside = path.with_name(f"{_ASIDE}{path.name}-{secrets.token_hex(_TOKEN_BYTES)}")
        try:
            if path.stat().st_mtime >= idle_before:
                return None
            path.rename(aside)  # unreadable from here on; a rename keeps the mtime
        except FileNotFoundError:
            return None
        status = aside.stat()
        try:
            unwanted = status.st_mtime < idle_before and not wanted()
        except BaseException:
            _put_back(aside, path)
            raise
        if path.exists():  # a writer stored the key again meanwhile: the same bytes, its own
            aside.unlink()
            return None
        if unwanted:
            aside.unlink()
            return status.st_size
        aside.rename(path)
        return None

    def restore_collecting(self, prefix: str) -> int:
        restored = 0
        for aside in self._path(prefix).rglob(f"{_ASIDE}*"):
            name, _, token = aside.name[len(_ASIDE) :].rpartition("-")
            if not name or len(token) != 2 * _TOKEN_BYTES:
                continue  # not one of ours
            path = aside.with_name(name)
            restored += not path.exists()
            _put_back(aside, path)
        return restored


def _chunks(
    handle: BinaryIO, chunk_size: int, *, close: bool = True, limit: int | None = None
) -> Iterator[bytes]:
    left = limit
    try:
        while left is None or left > 0:
            chunk = handle.read(chunk_size if left is None else min(chunk_size, left))
            if not chunk:
                break
            if left is not None:
                left -= len(chunk)
            yield chunk
    finally:
        if close:
            handle.close()
