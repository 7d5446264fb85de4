"""Registry garbage collection: the bytes of blobs no manifest needs any more.

Two steps, each safe against a push in progress:

1. **Links.** In each project, a blob linked before the grace period that none of the project's
   manifests references is unlinked (a deleted manifest's layers, a push abandoned before its
   manifest). A push names its blobs in its manifest within the grace period, or re-links them
   by uploading or mounting them; the manifest's store and this step lock the same rows, so a
   manifest is never stored over a blob being unlinked (``store.registry.blob_links_collect``).
2. **Bytes.** A blob in the store that no project holds, and that was stored before the grace
   period, is deleted. The store sets the blob aside before the last check and puts it back if
   it was stored or linked meanwhile (``BlobStore.collect``); uploads in progress are staging
   files, which this never touches (an idle one expires after ``--registry-upload-ttl``).

Manifests' own bytes are in their rows: deleting a manifest deletes them.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import functools
import logging
from collections.abc import Iterable
from dataclasses import dataclass

from benchrunner.server.context import ServerContext
from benchrunner.server.registry import manifests
from benchrunner.server.registry.references import SHA256_DIGEST, blob_key
from benchrunner.server.store import registry

log = logging.getLogger(__name__)

BLOBS_PREFIX = blob_key("sha256:" + "0" * 64).rsplit("/", 1)[0]


@dataclass(frozen=True)
class Collected:
    links: int
    """Links of projects to blobs no manifest of theirs references."""
    blobs: int
    """Blobs no project held, whose bytes were deleted."""
    bytes: int


def blobs_of_manifest(content: bytes, media_type: str) -> Iterable[str]:
    """The blobs a stored manifest needs. A stored manifest was valid when pushed; one that no
    longer parses raises, and its project is left alone."""
    return manifests.parse(content, media_type).blobs


def _digest_of(key: str) -> str | None:
    digest = "sha256:" + key.rsplit("/", 1)[-1]
    return digest if SHA256_DIGEST.fullmatch(digest) else None


async def _unlink_unreferenced(ctx: ServerContext, cutoff: dt.datetime) -> int:
    removed = 0
    for project_id in await ctx.db.read(registry.projects_with_blobs_before, cutoff):
        try:
            unlinked = await ctx.db.write(
                registry.blob_links_collect, project_id, cutoff, blobs_of_manifest
            )
        except Exception:
            log.exception("registry garbage collection skipped project %d", project_id)
            continue
        removed += len(unlinked)
    return removed


def _delete_unheld(ctx: ServerContext, held: set[str], idle_before: float) -> tuple[int, int]:
    """Blocking: the blobs no project holds, stored before ``idle_before``, deleted."""
    blobs = freed = 0
    restored = ctx.blobs.restore_collecting(BLOBS_PREFIX)
    if restored:
        log.warning("put back %d blob(s) that an interrupted collection had set aside", restored)
    for stored in ctx.blobs.scan(BLOBS_PREFIX):
        digest = _digest_of(stored.key)
        if digest is None or digest in held or stored.stored >= idle_before:
            continue
        wanted = functools.partial(ctx.db.read_sync, registry.blob_linked, digest)
        size = ctx.blobs.collect(stored.key, idle_before, wanted)
        if size is not None:
            blobs, freed = blobs + 1, freed + size
    return blobs, freed


async def collect_garbage(ctx: ServerContext) -> Collected:
    """One collection over the whole registry; what it removed."""
    cutoff = ctx.clock.now() - dt.timedelta(seconds=ctx.settings.registry_gc_grace)
    links = await _unlink_unreferenced(ctx, cutoff)
    held = await ctx.db.read(registry.blobs_linked)
    blobs, freed = await asyncio.to_thread(_delete_unheld, ctx, held, cutoff.timestamp())
    metrics = ctx.metrics
    metrics.registry_links.inc(links)
    metrics.registry_blobs.inc(blobs)
    metrics.registry_bytes.inc(freed)
    if links or blobs:
        log.info(
            "registry garbage collection unlinked %d unreferenced blobs and deleted %d (%d bytes)",
            links,
            blobs,
            freed,
            extra={"links": links, "blobs": blobs, "bytes": freed},
        )
    return Collected(links, blobs, freed)
