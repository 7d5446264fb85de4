"""Blob uploads: ``POST`` (monolithic with ``?digest=``, a session, or a cross-repository
``?mount=&from=``), ``PATCH`` (chunks, ``Content-Range`` checked), ``PUT`` (complete, digest
verified), ``GET`` (status) and ``DELETE`` (cancel) on ``/v2/<name>/blobs/uploads/``."""

from __future__ import annotations

import asyncio
import re

from fastapi import APIRouter, Request, Response

from benchrunner.server.http.deps import Ctx
from benchrunner.server.registry.access import Caller, authorize, may
from benchrunner.server.registry.errors import RegistryError
from benchrunner.server.registry.references import blob_key, check_name, sha256_hex
from benchrunner.server.registry.uploads import SessionLimits, Uploads, session_id, upload_id_of
from benchrunner.server.store import accounts, registry
from benchrunner.server.store.accounts import ProjectRow

router = APIRouter(tags=["registry"])
# ASCII digits, at most 19 of them: offsets past 2**63 are no offsets into any upload.
CONTENT_RANGE = re.compile(r"(?:bytes[ =])?([0-9]{1,19})-([0-9]{1,19})(?:/(?:[0-9]{1,19}|\*))?")


def _length(request: Request) -> str | None:
    return request.headers.get("content-length")


def _uploads(ctx: Ctx) -> Uploads:
    settings = ctx.settings
    limits = SessionLimits(
        ttl=settings.registry_upload_ttl,
        per_repository=settings.registry_uploads_per_repository,
        per_user=settings.registry_uploads_per_user,
    )
    return Uploads(ctx.blobs, settings.registry_max_body_bytes, limits, ctx.clock)


def _session_headers(
    ctx: Ctx, name: str, project: ProjectRow, upload_id: str, size: int
) -> dict[str, str]:
    session = session_id(ctx.secret_key, str(project.uuid), upload_id)
    return {
        "Location": f"/v2/{name}/blobs/uploads/{session}",
        "Range": f"0-{max(size - 1, 0)}",
        "Docker-Upload-UUID": session,
        "Content-Length": "0",
    }


def _created(name: str, digest: str) -> Response:
    headers = {
        "Location": f"/v2/{name}/blobs/{digest}",
        "Docker-Content-Digest": digest,
        "Content-Length": "0",
    }
    return Response(status_code=201, headers=headers)


async def _complete(
    ctx: Ctx, name: str, project: ProjectRow, upload_id: str, digest: str
) -> Response:
    size = await _uploads(ctx).commit(upload_id, digest)
    await ctx.db.write(registry.blob_link, project.id, digest, size, ctx.clock.now())
    if await asyncio.to_thread(ctx.blobs.size, blob_key(digest)) is None:
        # Object storage's garbage collection deleted the bytes in the instant they were stored
        # again (see ``BlobStore.collect``): nothing is linked, and the client pushes again.
        await ctx.db.write(registry.blob_unlink, project.id, digest)
        raise RegistryError(
            "BLOB_UPLOAD_UNKNOWN", "the blob was collected as it was stored: push it again"
        )
    return _created(name, digest)


async def _mount(
    ctx: Ctx, name: str, project: ProjectRow, caller: Caller, digest: str, source: str
) -> Response | None:
    """A 201 when the blob could be linked from ``source``; None to fall back to a session."""
    origin = await ctx.db.read(accounts.project_get, source)
    if origin is None or not may(caller, origin, "pull"):
        return None
    size = await ctx.db.read(registry.blob_size, origin.id, digest)
    if size is None:
        return None
    await ctx.db.write(registry.blob_link, project.id, digest, size, ctx.clock.now())
    if await asyncio.to_thread(ctx.blobs.size, blob_key(digest)) is None:
        # Garbage collection took the bytes as the origin's link went: upload them instead.
        await ctx.db.write(registry.blob_unlink, project.id, digest)
        return None
    return _created(name, digest)


@router.post("/v2/{name}/blobs/uploads/")
@router.post("/v2/{name}/blobs/uploads", include_in_schema=False)
async def upload_start(ctx: Ctx, request: Request, name: str) -> Response:
    project, caller = await authorize(ctx, request, name, "push")
    params = request.query_params
    mount, source = params.get("mount"), params.get("from")
    if mount is not None:
        sha256_hex(mount)
    if source is not None:
        check_name(source)
    if mount and source:
        mounted = await _mount(ctx, name, project, caller, mount, source)
        if mounted is not None:
            return mounted
    uploads = _uploads(ctx)
    digest = params.get("digest")
    if digest is not None:
        sha256_hex(digest)
    upload_id = await uploads.create(str(project.uuid), caller.subject)
    if digest is not None:
        try:
            await uploads.append(upload_id, request.stream(), 0, _length(request))
            return await _complete(ctx, name, project, upload_id, digest)
        except BaseException:
            await uploads.abort(upload_id)  # the client never learned this upload's id
            raise
    return Response(status_code=202, headers=_session_headers(ctx, name, project, upload_id, 0))


@router.patch("/v2/{name}/blobs/uploads/{session}")
async def upload_chunk(ctx: Ctx, request: Request, name: str, session: str) -> Response:
    project, _ = await authorize(ctx, request, name, "push")
    upload_id = upload_id_of(ctx.secret_key, str(project.uuid), session)
    uploads = _uploads(ctx)
    size = await uploads.size(upload_id)
    content_range = request.headers.get("content-range")
    if content_range:
        match = CONTENT_RANGE.fullmatch(content_range.strip())
        if match is None:
            raise RegistryError("BLOB_UPLOAD_INVALID", f"invalid Content-Range {content_range!r}")
        start, end = int(match.group(1)), int(match.group(2))
        if start != size or end < start:
            raise RegistryError(
                "BLOB_UPLOAD_INVALID",
                f"chunk {start}-{end} out of order: the upload holds bytes 0-{size - 1}",
                status=416,
                headers=_session_headers(ctx, name, project, upload_id, size),
            )
        length = request.headers.get("content-length")
        if length is not None and int(length) != end - start + 1:
            raise RegistryError(
                "BLOB_UPLOAD_INVALID", "Content-Length does not match Content-Range"
            )
    size = await uploads.append(upload_id, request.stream(), size, _length(request))
    return Response(status_code=202, headers=_session_headers(ctx, name, project, upload_id, size))


@router.put("/v2/{name}/blobs/uploads/{session}")
async def upload_finish(ctx: Ctx, request: Request, name: str, session: str) -> Response:
    project, _ = await authorize(ctx, request, name, "push")
    upload_id = upload_id_of(ctx.secret_key, str(project.uuid), session)
    digest = request.query_params.get("digest")
    if not digest:
        raise RegistryError("DIGEST_INVALID", "PUT completing an upload needs ?digest=")
    sha256_hex(digest)
    uploads = _uploads(ctx)
    size = await uploads.size(upload_id)
    await uploads.append(upload_id, request.stream(), size, _length(request))
    return await _complete(ctx, name, project, upload_id, digest)


@router.get("/v2/{name}/blobs/uploads/{session}")
async def upload_status(ctx: Ctx, request: Request, name: str, session: str) -> Response:
    project, _ = await authorize(ctx, request, name, "push")
    upload_id = upload_id_of(ctx.secret_key, str(project.uuid), session)
    size = await _uploads(ctx).size(upload_id)
    return Response(status_code=204, headers=_session_headers(ctx, name, project, upload_id, size))


@router.delete("/v2/{name}/blobs/uploads/{session}")
async def upload_cancel(ctx: Ctx, request: Request, name: str, session: str) -> Response:
    project, _ = await authorize(ctx, request, name, "push")
    upload_id = upload_id_of(ctx.secret_key, str(project.uuid), session)
    uploads = _uploads(ctx)
    await uploads.size(upload_id)
    await uploads.abort(upload_id)
    return Response(status_code=204)
