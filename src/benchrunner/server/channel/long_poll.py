"""The per-job long-poll claim, ``POST /v0/runners/{runner}/jobs``: the dispatcher's claim (the
channel's) awaited within one HTTP request (docs/decisions/per-job-transport.md).

A client that goes away stops the wait, so nothing is claimed for it afterwards; a job being
claimed in that very instant is never left ``claimed`` for nobody: the dispatcher hands it to
the lifecycle's ``undelivered``, as when a channel closes with a ``ready`` outstanding.
A job that was answered is watched by the disconnect timeout until its runner's socket reports
it (``runner_session.py``): a runner that never opens the job's socket loses it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from starlette.requests import Request

from benchrunner.protocol import JobAssigned
from benchrunner.server.channel.lifecycle import Lifecycle
from benchrunner.server.store.runners import RunnerRow

log = logging.getLogger(__name__)


async def _disconnected(request: Request) -> None:
    """Returns when the client closes its connection (the body was read already)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def claim_or_nothing(
    request: Request, life: Lifecycle, runner: RunnerRow, poll_timeout: float, templates: bool
) -> JobAssigned | None:
    """The job claimed for ``runner`` within ``poll_timeout`` seconds, or None (also when the
    client went away meanwhile); template jobs only with ``templates``."""
    waiting = asyncio.create_task(life.wait_for_job(runner, poll_timeout, templates=templates))
    gone = asyncio.create_task(_disconnected(request))
    try:
        await asyncio.wait({waiting, gone}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (gone, waiting):
            if not task.done():
                task.cancel()  # the dispatcher gives a claim landing now to ``undelivered``
                with contextlib.suppress(asyncio.CancelledError):
                    await task
    if waiting.cancelled():
        log.info("runner %s went away during its long-poll", runner.slug)
        return None
    found = waiting.result()
    if found is None:
        return None
    job, assigned = found
    if gone.done() and not gone.cancelled():
        log.info("runner %s went away as job %s was claimed for it", runner.slug, job.uuid)
        life.undelivered(job)
        return None
    life.detach(job.id)  # from now on the disconnect timeout holds it until the socket opens
    return assigned
