"""Blob upload sessions: ids bound to one repository, their caps and expiry, and streaming
request bodies into them.

A session id is the blob store's upload id plus an HMAC over (project UUID, upload id) with the
server secret, so a session needs no row, works on any replica sharing the blob directory, and
cannot be continued through another repository's URL.

Open sessions are capped per repository and per user (``429 TOOMANYREQUESTS``): each upload is
owned by a label of its repository and one of its user, and the blob store counts uploads by
owner in the shared directory, so the caps hold across replicas. A new upload is created first
and counted after; one that finds its owner over a cap is dropped again, so concurrent opens on
any replicas can never leave more than the cap (at worst, both of two racing opens are
refused). A session idle longer than the TTL is gone: any use of it answers ``404
BLOB_UPLOAD_UNKNOWN``, and every new session first sweeps the expired ones away.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

import anyio
import anyio.to_thread
from anyio.from_thread import run as run_from_thread
from starlette.requests import ClientDisconnect

from benchrunner.core.clock import Clock
from benchrunner.server.blobs.blob_store import BlobStore, DigestMismatch, UploadNotFound
from benchrunner.server.registry.errors import RegistryError
from benchrunner.server.registry.references import blob_key, sha256_hex

SESSION = re.compile(r"([A-Za-z0-9_-]{1,200})\.([0-9a-f]{32})")
RETRY_AFTER_SECONDS = 60  # how long a client refused by a cap should wait before trying again


def _mac(secret: str, project_uuid: str, upload_id: str) -> str:
    message = f"{project_uuid}/{upload_id}".encode()
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()[:32]


def session_id(secret: str, project_uuid: str, upload_id: str) -> str:
    return f"{upload_id}.{_mac(secret, project_uuid, upload_id)}"


def upload_id_of(secret: str, project_uuid: str, session: str) -> str:
    """The store's upload id behind ``session``; BLOB_UPLOAD_UNKNOWN for a malformed, forged or
    foreign one."""
    match = SESSION.fullmatch(session)
    if match is None or not hmac.compare_digest(
        match.group(2), _mac(secret, project_uuid, match.group(1))
    ):
        raise RegistryError("BLOB_UPLOAD_UNKNOWN", "upload session not known to this repository")
    return match.group(1)


def _owner(kind: str, name: str) -> str:
    """The blob store's owner label for a repository or user: short, fixed, no separators."""
    return hashlib.sha256(f"{kind}:{name}".encode()).hexdigest()[:16]


@dataclass(frozen=True)
class SessionLimits:
    """Caps on open upload sessions and how long an idle one lives (server settings)."""

    ttl: float
    per_repository: int
    per_user: int


class TooLarge(Exception):
    pass


@dataclass
class Uploads:
    """Blob uploads of one request, run off the event loop; sizes bounded by ``max_bytes``."""

    store: BlobStore
    max_bytes: int
    limits: SessionLimits
    clock: Clock

    def _idle_before(self) -> float:
        return self.clock.now().timestamp() - self.limits.ttl

    async def size(self, upload_id: str) -> int:
        """The bytes the session holds, which counts as a use of it; BLOB_UPLOAD_UNKNOWN when
        it does not exist (any more) or expired."""
        try:
            return await anyio.to_thread.run_sync(
                self.store.upload_resume, upload_id, self._idle_before()
            )
        except UploadNotFound:
            raise RegistryError("BLOB_UPLOAD_UNKNOWN", "upload session not found") from None

    async def create(self, project_uuid: str, user: str) -> str:
        """A new upload of ``user`` to the project's repository; expired ones are swept first
        (open uploads are few, being capped, so the sweep is cheap and needs no timer).
        TOOMANYREQUESTS when the repository or the user already has its cap of sessions."""
        caps = (
            (_owner("repository", project_uuid), self.limits.per_repository, "this repository"),
            (_owner("user", user), self.limits.per_user, "this user"),
        )

        def sweep_create_and_count() -> str:
            self.store.upload_expire(self._idle_before())
            upload_id = self.store.upload_create([owner for owner, _, _ in caps])
            for owner, cap, whose in caps:
                if self.store.upload_count(owner) > cap:
                    self.store.upload_abort(upload_id)
                    raise RegistryError(
                        "TOOMANYREQUESTS",
                        f"{whose} has {cap} open upload sessions, the most allowed: finish or "
                        f"cancel one (idle ones expire after {self.limits.ttl:g} s)",
                        headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
                    )
            return upload_id

        return await anyio.to_thread.run_sync(sweep_create_and_count)

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
