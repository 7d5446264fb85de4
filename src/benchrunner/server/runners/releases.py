"""Runner releases (docs/decisions/runner-releases.md): publishing a wheel, and the ``update`` a
ready runner is offered.

The wheel is kept in the blob store under its checksum and served by this server to runners
authenticated with their own key, so a runner needs nothing but its server to update.
"""

from __future__ import annotations

import asyncio
import urllib.parse
from typing import Any

from benchrunner.core.releases import (
    CHANNELS,
    UpdateChannel,
    is_sha256_hex,
    needs_update,
    sha256_file_hex,
    wheel_version,
)
from benchrunner.protocol import Ready, Update
from benchrunner.server.context import ServerContext
from benchrunner.server.http.errors import bad_request, conflict
from benchrunner.server.store import releases
from benchrunner.server.store.releases import NewRelease, ReleaseRow


def release_key(checksum: str) -> str:
    """Where the wheel hashing to ``checksum`` is kept in the blob store."""
    return f"runner-releases/{checksum}.whl"


def release_view(row: ReleaseRow) -> dict[str, Any]:
    return {
        "uuid": str(row.uuid),
        "channel": row.channel,
        "version": row.version,
        "checksum": row.checksum,
        "filename": row.filename,
        "size": row.size,
        "created": row.created.isoformat(),
    }


async def publish(
    ctx: ServerContext,
    *,
    channel: UpdateChannel,
    version: str,
    checksum: str,
    filename: str,
    data: bytes,
) -> ReleaseRow:
    """Store the wheel and make it its channel's newest release. Raises a 400 when the file is
    not a benchrunner wheel of ``version`` or does not hash to ``checksum``, a 409 when the
    channel already has that version; nothing is recorded then."""
    named = wheel_version(filename)
    if named is None:
        raise bad_request(
            f"filename {filename[:255]!r} is not a benchrunner wheel "
            "(benchrunner-VERSION-PYTHON-ABI-PLATFORM.whl)"
        )
    if named != version:
        raise bad_request(f"the wheel {filename!r} is version {named}, not {version}")
    if not is_sha256_hex(checksum):
        raise bad_request("checksum must be the wheel's SHA-256 as 64 lowercase hex digits")
    if not data:
        raise bad_request("the wheel is empty")
    actual = sha256_file_hex(data)
    if actual != checksum:
        raise bad_request(f"the wheel's SHA-256 is {actual}, not the checksum given ({checksum})")
    await asyncio.to_thread(ctx.blobs.put, release_key(checksum), data)
    new = NewRelease(channel, version, checksum, filename, len(data))
    row = await ctx.db.write(releases.release_insert, new, ctx.clock.now())
    if row is None:
        raise conflict(f"the {channel} channel already has a release {version}")
    return row


def download_path(runner_uuid: object, release: ReleaseRow) -> str:
    """The path the runner fetches the wheel from, ending in the wheel's own file name (pip
    reads the version from it)."""
    name = urllib.parse.quote(release.filename, safe="")
    return f"/v0/runners/{runner_uuid}/releases/{release.uuid}/{name}"


async def offer(ctx: ServerContext, ready: Ready) -> ReleaseRow | None:
    """The release a runner announcing ``ready`` should install, if any. Only Linux runners
    update themselves (the caller checks that the runner announced the ``update`` extension)."""
    metadata = ready.metadata()
    if (metadata.os or "").lower() != "linux":
        return None
    channel = next((c for c in CHANNELS if c == (ready.release_channel() or "stable")), None)
    if channel is None:
        return None
    latest = await ctx.db.read(releases.release_latest, channel)
    if latest is None:
        return None
    wanted = needs_update(
        channel,
        release_version=latest.version,
        release_checksum=latest.checksum,
        running_version=metadata.version,
        running_checksum=ready.running_checksum(),
    )
    return latest if wanted else None


def update_message(base_url: str, runner_uuid: object, release: ReleaseRow) -> Update:
    """``update`` with the wheel's URL on ``base_url``, the server as the runner reached it."""
    url = base_url.rstrip("/") + download_path(runner_uuid, release)
    return Update(version=release.version, url=url, checksum=release.checksum)
