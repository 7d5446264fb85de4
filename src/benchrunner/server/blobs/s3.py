"""The blob store in S3-compatible object storage (``--blob-store s3://BUCKET/PREFIX``).

The same contract as the local directory (``blobs.BlobStore``), kept with the operations every
S3-compatible server has: no rename, no append, no conditional write. Every key lives under
``PREFIX/``. The client is boto3's (blocking, like every blob store call; it is thread-safe);
the endpoint, region and credentials come from the standard ``AWS_*`` variables or the AWS
config files, and ``AWS_REGION`` is honoured as well as ``AWS_DEFAULT_REGION``.

- **Durable.** S3 answers a write once the object is stored, so ``put`` returning still means an
  ``ack`` sent after it is safe.
- **Streamed.** A write of unknown length goes up as a multipart upload, one part of
  ``part_size`` bytes in memory at a time; a read streams the object's body in chunks.
- **Uploads.** An upload is a folder ``_uploads/ID/``: an ``open`` marker (rewritten on every
  use, so its time says when the upload was last used), and one *piece* object per
  ``upload_append`` with its SHA-256 beside it. ``upload_commit`` copies a single piece into
  place on the server side (its hash is already known); several pieces are read back in order,
  hashed and written as one multipart upload that is completed only if the hash matches.
- **Times.** An object's time is S3's ``LastModified`` rounded up to the next whole second (a
  listing says milliseconds, a ``HEAD`` only seconds), so a blob never looks older than it is.
- **Collection.** With no rename, ``collect`` copies the blob aside, deletes it (it is then
  unreadable), asks ``wanted()`` and copies it back if wanted; a copy aside outlives only a
  collection cut short, and ``restore_collecting`` puts it back. A writer storing the key again
  after the delete wins as in the local store; one whose store fell between the check of the
  blob's time and its delete and who links the blob after ``wanted()`` was asked loses it, and
  must find that out by checking the blob after linking it (the registry does).
- **Unreachable.** Every failure to reach the store, or a refusal other than "no such key",
  raises ``BlobStoreUnavailable`` naming the store; nothing is half-written (a multipart upload
  that fails is aborted; one cut off by a crash is left to the bucket's lifecycle rule).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import itertools
import math
import os
import re
import secrets
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import boto3
import botocore.config
import botocore.exceptions
from boto3.s3.transfer import TransferConfig

from benchrunner.server.blobs.blob_store import (
    READ_CHUNK,
    BlobStoreUnavailable,
    DigestMismatch,
    StoredBlob,
    UploadNotFound,
    check_key,
    check_owners,
    check_upload_id,
)

if TYPE_CHECKING:
    from mypy_boto3_s3.client import S3Client
    from mypy_boto3_s3.type_defs import CompletedPartTypeDef

PART_SIZE = 8 << 20
"""Bytes of one part of a multipart upload (S3's least is 5 MiB but for the last part)."""
_UPLOADS = "_uploads"
_ASIDE = "_collecting"
_TOKEN_BYTES = 8
_OPEN = "open"
_PIECE = re.compile(r"piece-([0-9]{6})")
_MISSING = frozenset({"404", "NoSuchKey", "NotFound", "NoSuchUpload"})

R = TypeVar("R")


@dataclass(frozen=True)
class S3Location:
    bucket: str
    prefix: str

    @classmethod
    def parse(cls, url: str) -> S3Location:
        """``s3://BUCKET`` or ``s3://BUCKET/PREFIX``; ``ValueError`` naming the problem."""
        if not url.startswith("s3://"):
            raise ValueError(f"blob store {url!r} is not an s3://BUCKET/PREFIX URL")
        bucket, _, prefix = url.removeprefix("s3://").partition("/")
        if not re.fullmatch(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]", bucket):
            raise ValueError(f"blob store {url!r}: {bucket!r} is not a valid S3 bucket name")
        prefix = prefix.strip("/")
        if prefix:
            check_key(prefix)
        return cls(bucket, prefix)

    def __str__(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}" if self.prefix else f"s3://{self.bucket}"


def s3_client() -> S3Client:
    """A client configured the standard AWS way; ``AWS_REGION`` counts too, and a custom
    endpoint (``AWS_ENDPOINT_URL``: MinIO, Ceph, ...) is addressed by path, as those expect."""
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    config = botocore.config.Config(
        retries={"mode": "standard", "max_attempts": 3},
        connect_timeout=5,
        read_timeout=60,
        s3={"addressing_style": "path" if endpoint else "auto"},
    )
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    return boto3.session.Session().client("s3", region_name=region, config=config)


def _missing(exc: botocore.exceptions.ClientError) -> bool:
    error = exc.response.get("Error", {})
    return error.get("Code", "") in _MISSING


def _stored_time(modified: Any) -> float:
    return float(math.floor(modified.timestamp()) + 1)


class S3BlobStore:
    def __init__(
        self,
        location: S3Location,
        client: S3Client | None = None,
        part_size: int = PART_SIZE,
    ) -> None:
        self.location = location
        self._bucket = location.bucket
        self._client = client or s3_client()
        self._part_size = part_size
        self._copy_config = TransferConfig(
            multipart_threshold=4 << 30, multipart_chunksize=256 << 20, max_concurrency=4
        )

    # ------------------------------------------------------------------ plumbing

    def _unavailable(self, exc: Exception) -> BlobStoreUnavailable:
        return BlobStoreUnavailable(f"blob store {self.location} unavailable: {exc}")

    def _name(self, key: str) -> str:
        check_key(key)
        return f"{self.location.prefix}/{key}" if self.location.prefix else key

    def _key_of(self, name: str) -> str:
        prefix = self.location.prefix
        return name.removeprefix(f"{prefix}/") if prefix else name

    def check(self) -> None:
        """Raise ``BlobStoreUnavailable`` unless the bucket is there and answers."""
        self._call(self._client.head_bucket, Bucket=self._bucket)

    def _call(self, operation: Callable[..., R], /, **params: Any) -> R:
        try:
            return operation(**params)
        except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as exc:
            raise self._unavailable(exc) from exc

    def _head(self, name: str) -> dict[str, Any] | None:
        try:
            return dict(self._client.head_object(Bucket=self._bucket, Key=name))
        except botocore.exceptions.ClientError as exc:
            if _missing(exc):
                return None
            raise self._unavailable(exc) from exc
        except botocore.exceptions.BotoCoreError as exc:
            raise self._unavailable(exc) from exc

    def _list(self, prefix: str) -> Iterator[dict[str, Any]]:
        pages = self._client.get_paginator("list_objects_v2").paginate(
            Bucket=self._bucket, Prefix=prefix
        )
        try:
            for page in pages:
                yield from (dict(item) for item in page.get("Contents", []))
        except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as exc:
            raise self._unavailable(exc) from exc

    def _delete_all(self, names: Sequence[str]) -> None:
        for start in range(0, len(names), 1000):
            batch = [{"Key": name} for name in names[start : start + 1000]]
            self._call(
                self._client.delete_objects,
                Bucket=self._bucket,
                Delete={"Objects": batch, "Quiet": True},
            )

    def _copy(self, source: str, target: str) -> None:
        """A server-side copy (a multipart one for an object over 4 GiB)."""
        try:
            self._client.copy(
                {"Bucket": self._bucket, "Key": source},
                self._bucket,
                target,
                Config=self._copy_config,
            )
        except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as exc:
            raise self._unavailable(exc) from exc

    def _write(self, name: str, chunks: Iterable[bytes], on_part: Callable[[], None]) -> str:
        """Store the chunks under ``name``, streamed; their SHA-256. Nothing is stored if the
        chunks raise, which propagates."""
        hasher = hashlib.sha256()
        buffer = bytearray()
        upload_id: str | None = None
        parts: list[CompletedPartTypeDef] = []
        try:
            for chunk in chunks:
                hasher.update(chunk)
                buffer += chunk
                while len(buffer) >= self._part_size:
                    if upload_id is None:
                        created = self._call(
                            self._client.create_multipart_upload, Bucket=self._bucket, Key=name
                        )
                        upload_id = created["UploadId"]
                    part, buffer = bytes(buffer[: self._part_size]), buffer[self._part_size :]
                    self._upload_part(name, upload_id, parts, part)
                    on_part()
            if upload_id is None:
                self._call(self._client.put_object, Bucket=self._bucket, Key=name, Body=buffer)
                return hasher.hexdigest()
            if buffer:
                self._upload_part(name, upload_id, parts, bytes(buffer))
            self._call(
                self._client.complete_multipart_upload,
                Bucket=self._bucket,
                Key=name,
                UploadId=upload_id,
                MultipartUpload={"Parts": parts},
            )
            return hasher.hexdigest()
        except BaseException:
            if upload_id is not None:
                self._abort_multipart(name, upload_id)
            raise

    def _upload_part(
        self, name: str, upload_id: str, parts: list[CompletedPartTypeDef], data: bytes
    ) -> None:
        number = len(parts) + 1
        answer = self._call(
            self._client.upload_part,
            Bucket=self._bucket,
            Key=name,
            UploadId=upload_id,
            PartNumber=number,
            Body=data,
        )
        parts.append({"ETag": answer["ETag"], "PartNumber": number})

    def _abort_multipart(self, name: str, upload_id: str) -> None:
        with contextlib.suppress(
            botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError
        ):
            self._client.abort_multipart_upload(Bucket=self._bucket, Key=name, UploadId=upload_id)

    def _body(
        self, name: str, chunk_size: int, range_: str | None = None
    ) -> Iterator[bytes] | None:
        params: dict[str, Any] = {"Bucket": self._bucket, "Key": name}
        if range_ is not None:
            params["Range"] = range_
        try:
            body = self._client.get_object(**params)["Body"]
        except botocore.exceptions.ClientError as exc:
            if _missing(exc):
                return None
            if exc.response.get("Error", {}).get("Code") == "InvalidRange":
                return iter(())  # an offset at or past the end: nothing to read
            raise self._unavailable(exc) from exc
        except botocore.exceptions.BotoCoreError as exc:
            raise self._unavailable(exc) from exc
        return self._stream(body, chunk_size)

    def _stream(self, body: Any, chunk_size: int) -> Iterator[bytes]:
        try:
            yield from body.iter_chunks(chunk_size)
        except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as exc:
            raise self._unavailable(exc) from exc
        finally:
            body.close()

    # ------------------------------------------------------------------ blobs

    def put(self, key: str, data: bytes) -> None:
        self._call(self._client.put_object, Bucket=self._bucket, Key=self._name(key), Body=data)

    def get(self, key: str) -> bytes | None:
        chunks = self._body(self._name(key), READ_CHUNK)
        return None if chunks is None else b"".join(chunks)

    def delete(self, key: str) -> None:
        self._call(self._client.delete_object, Bucket=self._bucket, Key=self._name(key))

    def size(self, key: str) -> int | None:
        head = self._head(self._name(key))
        return None if head is None else int(head["ContentLength"])

    def read(
        self, key: str, offset: int = 0, length: int | None = None, chunk_size: int = READ_CHUNK
    ) -> Iterator[bytes] | None:
        name = self._name(key)
        if length == 0:
            return None if self._head(name) is None else iter(())
        if offset == 0 and length is None:
            return self._body(name, chunk_size)
        last = "" if length is None else str(offset + length - 1)
        return self._body(name, chunk_size, f"bytes={offset}-{last}")

    def scan(self, prefix: str) -> Iterator[StoredBlob]:
        for item in self._list(self._name(prefix) + "/"):
            yield StoredBlob(
                self._key_of(item["Key"]), int(item["Size"]), _stored_time(item["LastModified"])
            )

    def top_level(self) -> set[str]:
        """The first parts of every key (``scan`` takes a prefix: these cover the store)."""
        start = f"{self.location.prefix}/" if self.location.prefix else ""
        pages = self._client.get_paginator("list_objects_v2").paginate(
            Bucket=self._bucket, Prefix=start, Delimiter="/"
        )
        try:
            return {
                common["Prefix"][len(start) :].rstrip("/")
                for page in pages
                for common in page.get("CommonPrefixes", [])
            }
        except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as exc:
            raise self._unavailable(exc) from exc

    def collect(self, key: str, idle_before: float, wanted: Callable[[], bool]) -> int | None:
        name = self._name(key)
        head = self._head(name)
        if head is None or _stored_time(head["LastModified"]) >= idle_before:
            return None
        aside = self._name(f"{_ASIDE}/{key}-{secrets.token_hex(_TOKEN_BYTES)}")
        try:
            self._copy(name, aside)
        except BlobStoreUnavailable:
            if self._head(name) is None:
                return None  # deleted meanwhile
            raise
        # From here on the copy aside is deleted only once the blob is back or unwanted: a
        # failure leaves it for ``restore_collecting``.
        self._call(self._client.delete_object, Bucket=self._bucket, Key=name)
        try:
            unwanted = not wanted()
        except BaseException:
            self._put_back(aside, name)
            raise
        freed: int | None = None
        if self._head(name) is not None:  # a writer stored the key again meanwhile
            pass
        elif unwanted:
            freed = int(head["ContentLength"])
        else:
            self._copy(aside, name)
        self._call(self._client.delete_object, Bucket=self._bucket, Key=aside)
        return freed

    def _put_back(self, aside: str, name: str) -> None:
        if self._head(name) is None:
            self._copy(aside, name)
        self._call(self._client.delete_object, Bucket=self._bucket, Key=aside)

    def restore_collecting(self, prefix: str) -> int:
        root = self._name(_ASIDE) + "/"
        restored = 0
        for item in self._list(f"{root}{prefix}/"):
            aside = item["Key"]
            key, token = aside[len(root) :].rsplit("-", 1)
            if len(token) != 2 * _TOKEN_BYTES:
                continue  # not one of ours
            name = self._name(key)
            missing = self._head(name) is None
            self._put_back(aside, name)
            restored += missing
        return restored

    # ------------------------------------------------------------------ uploads

    def _upload_prefix(self, upload_id: str) -> str:
        check_upload_id(upload_id)
        return self._name(f"{_UPLOADS}/{upload_id}") + "/"

    def _touch(self, upload_id: str) -> None:
        name = self._upload_prefix(upload_id) + _OPEN
        self._call(self._client.put_object, Bucket=self._bucket, Key=name, Body=b"")

    def _upload(self, upload_id: str) -> _Upload:
        prefix = self._upload_prefix(upload_id)
        upload = _Upload(prefix)
        for item in self._list(prefix):
            upload.add(item)
        if not upload.open:
            raise UploadNotFound(upload_id)
        return upload

    def upload_create(self, owners: Sequence[str] = ()) -> str:
        check_owners(owners)
        upload_id = "_".join([*owners, secrets.token_hex(16)])
        self._touch(upload_id)
        return upload_id

    def upload_count(self, owner: str) -> int:
        return sum(owner in upload_id.split("_")[:-1] for upload_id in self._upload_ids())

    def _upload_ids(self) -> set[str]:
        top = self._name(_UPLOADS) + "/"
        return {item["Key"][len(top) :].split("/", 1)[0] for item in self._list(top)}

    def upload_resume(self, upload_id: str, idle_before: float) -> int:
        upload = self._upload(upload_id)
        if upload.used < idle_before:
            self._delete_all(upload.names)
            raise UploadNotFound(upload_id)
        self._touch(upload_id)
        return upload.size

    def upload_append(self, upload_id: str, chunks: Iterable[bytes]) -> int:
        upload = self._upload(upload_id)
        stream = iter(chunks)
        first = next((chunk for chunk in stream if chunk), None)
        if first is None:
            self._touch(upload_id)
            return upload.size
        piece = f"{upload.prefix}piece-{len(upload.pieces):06d}"

        def counted() -> Iterator[bytes]:
            for chunk in itertools.chain([first], stream):
                upload.size += len(chunk)
                yield chunk

        sha256 = self._write(piece, counted(), functools.partial(self._touch, upload_id))
        self._call(self._client.put_object, Bucket=self._bucket, Key=f"{piece}.sha256", Body=sha256)
        self._touch(upload_id)
        return upload.size

    def upload_commit(self, upload_id: str, key: str, sha256_hex: str) -> int:
        upload = self._upload(upload_id)
        name = self._name(key)
        known = upload.sha256_of_single_piece(self._read_small)
        if known is not None:
            if known != sha256_hex:
                raise DigestMismatch(sha256_hex, known)
            self._copy(upload.pieces[0][1], name)
        else:
            self._write_checked(name, upload, sha256_hex)
        self._delete_all(upload.names)
        return upload.size

    def _read_small(self, name: str) -> bytes | None:
        chunks = self._body(name, READ_CHUNK)
        return None if chunks is None else b"".join(chunks)

    def _write_checked(self, name: str, upload: _Upload, sha256_hex: str) -> None:
        """Write the pieces under ``name`` as one object if they hash to ``sha256_hex``; else
        store nothing and raise ``DigestMismatch``."""

        def pieces() -> Iterator[bytes]:
            for _, piece in upload.pieces:
                chunks = self._body(piece, READ_CHUNK)
                if chunks is None:
                    raise UploadNotFound(upload.prefix)  # aborted or expired meanwhile
                yield from chunks

        hasher = hashlib.sha256()

        def checked() -> Iterator[bytes]:
            for chunk in pieces():
                hasher.update(chunk)
                yield chunk
            if hasher.hexdigest() != sha256_hex:
                raise DigestMismatch(sha256_hex, hasher.hexdigest())

        self._write(name, checked(), lambda: None)

    def upload_abort(self, upload_id: str) -> None:
        with contextlib.suppress(UploadNotFound):
            self._delete_all([item["Key"] for item in self._list(self._upload_prefix(upload_id))])

    def upload_expire(self, idle_before: float) -> int:
        top = self._name(_UPLOADS) + "/"
        uploads: dict[str, _Upload] = {}
        for item in self._list(top):
            upload_id = item["Key"][len(top) :].split("/", 1)[0]
            uploads.setdefault(upload_id, _Upload(f"{top}{upload_id}/")).add(item)
        expired = [u for u in uploads.values() if u.used < idle_before]
        self._delete_all([name for upload in expired for name in upload.names])
        return len(expired)


class _Upload:
    """What a listing of one upload's folder says."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.open = False
        self.size = 0
        self.used = 0.0
        self.names: list[str] = []
        self.pieces: list[tuple[int, str]] = []
        self._hashes: set[str] = set()

    def add(self, item: dict[str, Any]) -> None:
        name = str(item["Key"])
        leaf = name[len(self.prefix) :]
        self.names.append(name)
        self.used = max(self.used, _stored_time(item["LastModified"]))
        if leaf == _OPEN:
            self.open = True
        elif (match := _PIECE.fullmatch(leaf)) is not None:
            self.pieces.append((int(match.group(1)), name))
            self.pieces.sort()
            self.size += int(item["Size"])
        elif leaf.endswith(".sha256"):
            self._hashes.add(leaf.removesuffix(".sha256"))

    def sha256_of_single_piece(self, read: Callable[[str], bytes | None]) -> str | None:
        """The upload's SHA-256 when it is one piece whose hash was recorded; else None."""
        if len(self.pieces) != 1 or self.pieces[0][1][len(self.prefix) :] not in self._hashes:
            return None
        recorded = read(self.pieces[0][1] + ".sha256")
        return None if recorded is None else recorded.decode("ascii", "replace")
