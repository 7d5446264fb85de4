"""Runner releases (docs/decisions/runner-releases.md): admins publish benchrunner wheels per update
channel; a runner downloads the one it was offered with its own key."""

from __future__ import annotations

import asyncio
import uuid
from typing import Annotated

from fastapi import APIRouter, Form, Request, Response, UploadFile

from benchrunner.api.releases import Release
from benchrunner.core.releases import CHANNELS, UpdateChannel
from benchrunner.core.tokens import bearer, is_runner_token
from benchrunner.server.http.answers import ANSWERED, answered, answered_each
from benchrunner.server.http.errors import not_found, unauthorized
from benchrunner.server.routes.deps import Admin, Ctx
from benchrunner.server.runners import releases
from benchrunner.server.store import releases as release_store
from benchrunner.server.store import runners

router = APIRouter(tags=["releases"])


@router.post("/v0/server/releases", status_code=201, **ANSWERED)
async def publish_release(
    _admin: Admin,
    ctx: Ctx,
    channel: Annotated[UpdateChannel, Form(description=f"one of {', '.join(CHANNELS)}")],
    version: Annotated[str, Form(min_length=1, max_length=64)],
    checksum: Annotated[str, Form(min_length=64, max_length=64, description="SHA-256, hex")],
    wheel: UploadFile,
) -> Release:
    """Publish a runner release: the wheel (multipart field ``wheel``, at most the server's
    request body limit), its version and SHA-256. Linux runners of ``channel`` that announce the
    ``update`` extension are offered it in place of their next job."""
    data = await wheel.read()
    row = await releases.publish(
        ctx,
        channel=channel,
        version=version,
        checksum=checksum.lower(),
        filename=wheel.filename or "",
        data=data,
    )
    return answered(Release, releases.release_view(row))


@router.get("/v0/server/releases", **ANSWERED)
async def list_releases(
    _admin: Admin, ctx: Ctx, channel: UpdateChannel | None = None
) -> list[Release]:
    """The published releases, newest first; the first of a channel is the one offered."""
    rows = await ctx.db.read(release_store.release_list, channel)
    return answered_each(Release, [releases.release_view(r) for r in rows])


@router.get(
    "/v0/runners/{runner}/releases/{release}/{filename}",
    response_class=Response,
    responses={200: {"content": {"application/octet-stream": {}}}},
)
async def download_release(
    runner: str, release: uuid.UUID, filename: str, request: Request, ctx: Ctx
) -> Response:
    """The release's wheel, for a runner authenticated with its own key (``update``'s URL)."""
    token = bearer(request.headers.get("authorization"))
    if token is None or not is_runner_token(token):
        raise unauthorized("send the runner key: Authorization: Bearer bencher_runner_...")
    row = await ctx.db.read(runners.runner_authenticate, runner, token)
    if row is None:
        raise unauthorized("invalid runner key, unknown runner, or archived runner")
    found = await ctx.db.read(release_store.release_get, release)
    if found is None or found.filename != filename:
        raise not_found("release", f"{release}/{filename}")
    data = await asyncio.to_thread(ctx.blobs.get, releases.release_key(found.checksum))
    if data is None:
        raise not_found("wheel of release", str(release))
    return Response(
        data,
        media_type="application/octet-stream",
        headers={"Content-Disposition": f'attachment; filename="{found.filename}"'},
    )
