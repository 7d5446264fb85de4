"""Retention (docs/decisions/retention.md): the stored outputs of finished jobs older than
``--retention-days`` are deleted, the newest ``--retention-keep`` finished jobs' always kept.

Reports, metrics and job events are history and stay; so does the job row, marked with when its
outputs went (``outputs_purged``). A job is marked first, with a compare-and-set on its status
and last change, and only then are its outputs deleted: a job a late result moved on meanwhile
is left alone.

Everything a job stores goes through ``purge_job_outputs``: stored logs join it there.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from benchrunner.server.blobs.blob_store import BlobStore, job_output_key
from benchrunner.server.context import ServerContext
from benchrunner.server.store import retention
from benchrunner.server.store.retention import StoredOutputs

log = logging.getLogger(__name__)

BATCH = 500


@dataclass(frozen=True)
class Purged:
    jobs: int
    bytes: int


def purge_job_outputs(blobs: BlobStore, stored: Sequence[StoredOutputs]) -> Purged:
    """Delete everything stored for these jobs outside the database (the output blob of
    those whose output was too large for a row); how many bytes went. Blocking: call it off
    the event loop."""
    freed = 0
    for found in stored:
        key = job_output_key(found.project_uuid, found.uuid)
        freed += blobs.size(key) or 0
        blobs.delete(key)
    return Purged(len(stored), freed)


async def expire_outputs(ctx: ServerContext) -> Purged:
    """One retention sweep over every expired job, in batches; what it deleted."""
    settings = ctx.settings
    now = ctx.clock.now()
    cutoff = now - dt.timedelta(days=settings.retention_days)
    jobs = freed = 0
    while True:
        due = await ctx.db.read(
            retention.jobs_with_expired_outputs, cutoff, settings.retention_keep, BATCH
        )
        marked = await ctx.db.write(
            retention.jobs_mark_outputs_purged, [d.id for d in due], cutoff, now
        )
        kept = set(marked.ids)
        purged = await asyncio.to_thread(
            purge_job_outputs, ctx.blobs, [d for d in due if d.id in kept]
        )
        purged = Purged(purged.jobs, purged.bytes + marked.freed)
        jobs, freed = jobs + purged.jobs, freed + purged.bytes
        ctx.metrics.retention_jobs.inc(purged.jobs)
        ctx.metrics.retention_bytes.inc(purged.bytes)
        if len(due) < BATCH:
            break
    if jobs:
        log.info(
            "retention deleted the outputs of %d jobs (%d bytes)",
            jobs,
            freed,
            extra={"jobs": jobs, "bytes": freed},
        )
    return Purged(jobs, freed)
