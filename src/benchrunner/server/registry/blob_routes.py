"""``GET /v2/`` and blobs: ``GET``/``HEAD``/``DELETE /v2/<name>/blobs/<digest>``."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.responses import StreamingResponse

from benchrunner.server.registry.access import authenticated, authorize
from benchrunner.server.registry.errors import RegistryError
from benchrunner.server.registry.references import blob_key
from benchrunner.server.routes.deps import Ctx
from benchrunner.server.store import registry

router = APIRouter(tags=["registry"])


@router.get("/v2/")
@router.get("/v2", include_in_schema=False)
async def base(ctx: Ctx, request: Request) -> Response:
    """200 to any valid registry token: how clients learn the registry speaks the spec."""
    authenticated(ctx, request)
    return Response(
        content=b"{}",
        media_type="application/json",
        headers={"Docker-Distribution-API-Version": "registry/2.0"},
    )


@router.api_route("/v2/{name}/blobs/{digest}", methods=["GET", "HEAD"])
async def blob_get(ctx: Ctx, request: Request, name: str, digest: str) -> Response:
    project, _ = await authorize(ctx, request, name, "pull")
    key = blob_key(digest)
    size = await ctx.db.read(registry.blob_size, project.id, digest)
    if size is None:
        raise RegistryError("BLOB_UNKNOWN", f"blob {digest} unknown to repository {name!r}")
    headers = {
        "Content-Length": str(size),
        "Docker-Content-Digest": digest,
        "Content-Type": "application/octet-stream",
    }
    if request.method == "HEAD":
        return Response(status_code=200, headers=headers)
    chunks = ctx.blobs.read(key)
    if chunks is None:
        raise RegistryError("BLOB_UNKNOWN", f"blob {digest} is missing from the blob store")
    return StreamingResponse(chunks, headers=headers, media_type="application/octet-stream")


@router.delete("/v2/{name}/blobs/{digest}")
async def blob_delete(ctx: Ctx, request: Request, name: str, digest: str) -> Response:
    """Unlink the blob from this repository. Its bytes stay for other repositories holding it
    (and for a later garbage collection)."""
    project, _ = await authorize(ctx, request, name, "delete")
    blob_key(digest)
    if not await ctx.db.write(registry.blob_unlink, project.id, digest):
        raise RegistryError("BLOB_UNKNOWN", f"blob {digest} unknown to repository {name!r}")
    return Response(status_code=202, headers={"Content-Length": "0"})
