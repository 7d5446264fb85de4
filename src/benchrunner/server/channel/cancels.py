"""A user's cancel of a job (``POST .../jobs/{job}/cancel`` and the console's job page alike):
the access check, the lifecycle's cancel, and why a job that already finished was not canceled."""

from __future__ import annotations

from benchrunner.server.access import job_access
from benchrunner.server.channel.lifecycle import Lifecycle
from benchrunner.server.context import ServerContext
from benchrunner.server.http.errors import conflict
from benchrunner.server.store import jobs
from benchrunner.server.store.accounts import UserRow


async def cancel(
    ctx: ServerContext, life: Lifecycle, project: str, job: str, user: UserRow | None
) -> None:
    """Cancel a pending, claimed or running job as ``user``: 404 when the job is not in a
    project the user may see, 403 when it may not change it, 409 when the job has already
    finished."""
    found = await ctx.db.read(lambda conn: job_access(conn, user, project, job, write=True))
    actor = user.email if user else "anonymous"
    if not await life.cancel(found.job, actor):
        current = await ctx.db.read(jobs.job_get, found.job.id)
        state = current.status.wire if current else "gone"
        raise conflict(
            f"job {job} is already {state}; only pending, claimed or running jobs can be canceled"
        )
