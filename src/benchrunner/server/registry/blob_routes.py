"""``GET /v2/`` and blobs: ``GET``/``HEAD``/``DELETE /v2/<name>/blobs/<digest>``."""

from __future__ import annotations

import re

from fastapi import APIRouter, Request, Response
from fastapi.responses import StreamingResponse

from benchrunner.server.http.deps import Ctx
from benchrunner.server.registry.access import authenticated, authorize
from benchrunner.server.registry.errors import RegistryError
from benchrunner.server.registry.references import blob_key
from benchrunner.server.store import registry

router = APIRouter(tags=["registry"])
# ASCII digits only (\d takes any script's), and few enough for int(): a longer number is no
# offset into any blob, so the range is simply unsatisfiable.
BYTE_RANGE = re.compile(r"bytes=([0-9]{0,19})-([0-9]{0,19})")


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
    headers["Accept-Ranges"] = "bytes"
    if request.method == "HEAD":
        return Response(status_code=200, headers=headers)
    start, end = 0, size - 1
    wanted = request.headers.get("range")
    if wanted:
        start, end = _byte_range(wanted, size)
        headers["Content-Range"] = f"bytes {start}-{end}/{size}"
        headers["Content-Length"] = str(end - start + 1)
    chunks = ctx.blobs.read(key, start, end - start + 1)
    if chunks is None:
        raise RegistryError("BLOB_UNKNOWN", f"blob {digest} is missing from the blob store")
    return StreamingResponse(
        chunks,
        status_code=206 if wanted else 200,
        headers=headers,
        media_type="application/octet-stream",
    )


def _byte_range(header: str, size: int) -> tuple[int, int]:
    """``bytes=a-b``, ``bytes=a-`` or ``bytes=-n`` as inclusive offsets; 416 if unsatisfiable."""
    match = BYTE_RANGE.fullmatch(header.strip())
    first, last = (match.group(1), match.group(2)) if match else ("", "")
    if not match or (first == "" and last == ""):
        start, end = -1, -1
    elif first == "":
        start, end = max(size - int(last), 0), size - 1
    else:
        start, end = int(first), min(int(last), size - 1) if last else size - 1
    if not 0 <= start <= end < size:
        raise RegistryError(  # the spec names no code for this; SIZE_INVALID is nearest
            "SIZE_INVALID",
            f"range {header!r} not satisfiable for a blob of {size} bytes",
            status=416,
            headers={"Content-Range": f"bytes */{size}"},
        )
    return start, end


@router.delete("/v2/{name}/blobs/{digest}")
async def blob_delete(ctx: Ctx, request: Request, name: str, digest: str) -> Response:
    """Unlink the blob from this repository. Its bytes stay for other repositories holding it
    (and for a later garbage collection)."""
    project, _ = await authorize(ctx, request, name, "delete")
    blob_key(digest)
    if not await ctx.db.write(registry.blob_unlink, project.id, digest):
        raise RegistryError("BLOB_UNKNOWN", f"blob {digest} unknown to repository {name!r}")
    return Response(status_code=202, headers={"Content-Length": "0"})
