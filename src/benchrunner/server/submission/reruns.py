"""A finished job submitted again (``POST .../jobs/{job}/rerun`` and the console's job page
alike): a new report and job with the same config, past the same backlog cap as a submission."""

from __future__ import annotations

from sqlalchemy.engine import Connection

from benchrunner.core.states import FINISHED
from benchrunner.core.templates import TemplateError
from benchrunner.server.access import job_access
from benchrunner.server.context import ServerContext
from benchrunner.server.http.errors import bad_request, conflict
from benchrunner.server.services import Services
from benchrunner.server.store import accounts, registry, reruns, runners
from benchrunner.server.store.accounts import UserRow
from benchrunner.server.store.jobs import JobRow, Origin
from benchrunner.server.submission.backpressure import check_backlog


async def submit_rerun(
    ctx: ServerContext,
    services: Services,
    project: str,
    job: str,
    user: UserRow | None,
    origin: Origin,
) -> reruns.Rerun:
    """Submit a finished job again as ``user``: 404/403 as ``access.job_access`` answers,
    409 while the job is in flight, 400 when what it ran is gone, 429 over the organization's
    backlog cap."""

    def unit(conn: Connection) -> tuple[reruns.Rerun, int]:
        old = job_access(conn, user, project, job, write=True).job
        if old.status not in FINISHED:
            raise conflict(
                f"job {job} is still {old.status.wire}; only a finished job can be rerun "
                "(wait for it to finish, or cancel it first)"
            )
        _check_rerunnable(conn, ctx, old)
        org, priority = accounts.organization_for_job(conn, old.organization_id)
        check_backlog(conn, ctx.settings, org.id, org.slug)
        user_id = user.id if user else None
        rerun = reruns.job_rerun(conn, old, priority, origin, user_id, ctx.clock.now())
        return rerun, old.spec_id

    rerun, spec_id = await ctx.db.write(unit)
    services.wakeups.job_created(spec_id)
    return rerun


def _check_rerunnable(conn: Connection, ctx: ServerContext, old: JobRow) -> None:
    """400 when what the job ran is gone: its spec archived, its template or image removed."""
    if runners.spec_by_id(conn, old.spec_id).archived is not None:
        raise bad_request(f"job {old.uuid}'s spec is archived: it cannot run again")
    config = old.config
    if config.template is not None:
        try:
            ctx.templates.get(config.template)
        except TemplateError as exc:
            raise bad_request(f"job {old.uuid} cannot run again: {exc}") from None
    elif config.digest is not None and not registry.manifest_exists(
        conn, old.project_id, config.digest
    ):
        raise bad_request(f"job {old.uuid}'s image {config.digest} is no longer in the registry")
