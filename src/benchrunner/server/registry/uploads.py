"""Blob upload sessions: ids bound to one repository, and streaming request bodies into them.

A session id is the blob store's upload id plus an HMAC over (project UUID, upload id) with the
server secret, so a session needs no row, works on any replica sharing the blob directory, and
cannot be continued through another repository's URL.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

import anyio
import anyio.to_thread
from anyio.from_thread import run as run_from_thread
from starlette.requests import ClientDisconnect

from benchrunner.server.blobs import BlobStore, DigestMismatch, UploadNotFound
from benchrunner.server.registry.errors import RegistryError
from benchrunner.server.registry.references import blob_key, sha256_hex

UPLOAD_IDLE_SECONDS = 24 * 3600  # an upload untouched this long is abandoned


def _mac(secret: str, project_uuid: str, upload_id: str) -> str:
    message = f"{project_uuid}/{upload_id}".encode()
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()[:32]


def session_id(secret: str, project_uuid: str, upload_id: str) -> str:
    return f"{upload_id}.{_mac(secret, project_uuid, upload_id)}"


def upload_id_of(secret: str, project_uuid: str, session: str) -> str:
    """The store's upload id behind ``session``; BLOB_UPLOAD_UNKNOWN for a forged or foreign one."""
    upload_id, _, mac = session.rpartition(".")
    if not upload_id or not hmac.compare_digest(mac, _mac(secret, project_uuid, upload_id)):
        raise RegistryError("BLOB_UPLOAD_UNKNOWN", "upload session not known to this repository")
    return upload_id


class TooLarge(Exception):
    pass


@dataclass
class Uploads:
    """Blob uploads of one request, run off the event loop; sizes bounded by ``max_bytes``."""

    store: BlobStore
    max_bytes: int

    async def size(self, upload_id: str) -> int:
        try:
            return await anyio.to_thread.run_sync(self.store.upload_size, upload_id)
        except UploadNotFound:
            raise RegistryError("BLOB_UPLOAD_UNKNOWN", "upload session not found") from None

    async def create(self) -> str:
        """A new upload; abandoned ones are swept first (in-flight uploads are few, so the
        sweep is cheap and needs no timer)."""

        def sweep_and_create() -> str:
            self.store.upload_expire(UPLOAD_IDLE_SECONDS)
            return self.store.upload_create()

        return await anyio.to_thread.run_sync(sweep_and_create)

    def _too_large(self) -> RegistryError:
        return RegistryError(
            "SIZE_INVALID",
            f"blob exceeds the registry's limit of {self.max_bytes} bytes; the upload was dropped",
            status=413,
        )

    async def append(
        self, upload_id: str, body: AsyncIterator[bytes], already: int, declared: str | None
    ) -> int:
        """Stream ``body`` (of ``declared`` Content-Length, if any) onto the upload, which holds
        ``already`` bytes; the new size. Over the limit, the upload is dropped."""
        limit = self.max_bytes
        if declared is not None and declared.isdigit() and already + int(declared) > limit:
            await self.abort(upload_id)
            raise self._too_large()

        async def next_chunk() -> bytes:
            return await body.__anext__()

        def chunks() -> Iterator[bytes]:
            seen = already
            while True:
                try:
                    chunk = run_from_thread(next_chunk)
                except StopAsyncIteration:
                    return
                seen += len(chunk)
                if seen > limit:
                    raise TooLarge
                if chunk:
                    yield chunk

        try:
            return await anyio.to_thread.run_sync(self.store.upload_append, upload_id, chunks())
        except UploadNotFound:
            raise RegistryError("BLOB_UPLOAD_UNKNOWN", "upload session not found") from None
        except ClientDisconnect:
            # What arrived is kept: the client may ask for the upload's status and resume.
            raise RegistryError("BLOB_UPLOAD_INVALID", "the client went away mid-upload") from None
        except TooLarge:
            await self.abort(upload_id)
            raise self._too_large() from None

    async def commit(self, upload_id: str, digest: str) -> int:
        """Move the upload under its digest, if it hashes to it; the blob's size."""
        hex_digest = sha256_hex(digest)
        try:
            return await anyio.to_thread.run_sync(
                self.store.upload_commit, upload_id, blob_key(digest), hex_digest
            )
        except UploadNotFound:
            raise RegistryError("BLOB_UPLOAD_UNKNOWN", "upload session not found") from None
        except DigestMismatch as exc:
            raise RegistryError("DIGEST_INVALID", f"digest mismatch: {exc}") from None

    async def abort(self, upload_id: str) -> None:
        await anyio.to_thread.run_sync(self.store.upload_abort, upload_id)
