"""The access policy: who may read and who may change a project, a job, an organization, a
user, and what only a server admin may do. The API's routes, the console's pages, the registry
and the submission service all ask here, so a rule holds the same everywhere.

Public projects are read by anyone, private ones by their organization's members and server
admins; a project the caller may not read is a 404 (never a 403 that would tell an outsider a
private project exists), one it may read but not change is a 403.
"""

from __future__ import annotations

import uuid

from sqlalchemy.engine import Connection

from benchrunner.core.tiers import Plan
from benchrunner.server.http.errors import forbidden, not_found, unauthorized
from benchrunner.server.store import accounts, job_reads
from benchrunner.server.store.accounts import OrganizationRow, ProjectRow, UserRow
from benchrunner.server.store.job_reads import JobDetail


def can_see(conn: Connection, viewer: UserRow | None, project: ProjectRow) -> bool:
    """Public projects are seen by everyone; private ones by their organization's members and
    server admins only."""
    if project.visibility == "public":
        return True
    if viewer is None:
        return False
    return viewer.admin or accounts.role_of(conn, viewer.id, project.organization_id) is not None


def _can_write(conn: Connection, viewer: UserRow | None, project: ProjectRow) -> bool:
    """Members and admins write; anyone writes to an unclaimed organization's public project."""
    if viewer is not None and (
        viewer.admin or accounts.role_of(conn, viewer.id, project.organization_id) is not None
    ):
        return True
    return project.visibility == "public" and not accounts.organization_is_claimed(
        conn, project.organization_id
    )


def project_access(
    conn: Connection,
    viewer: UserRow | None,
    ref: str,
    *,
    write: bool,
    found: ProjectRow | None = None,
) -> ProjectRow:
    """The project (``found`` if already read), or 404 when the caller may not know it exists,
    or 403 to a visible one."""
    project = found or accounts.project_get(conn, ref)
    if project is None or not can_see(conn, viewer, project):
        raise not_found("project", ref)
    if write and not _can_write(conn, viewer, project):
        raise forbidden(f"you may not change project {ref!r}")
    return project


def job_access(
    conn: Connection,
    viewer: UserRow | None,
    project: str,
    ref: str,
    *,
    write: bool,
    found_project: ProjectRow | None = None,
) -> JobDetail:
    """The job (with its spec, runner and report), or 404 if it is not in a project the
    viewer may see (403 if it may not change it and ``write``); ``found_project`` is the
    project if already read."""
    row = project_access(conn, viewer, project, write=write, found=found_project)
    try:
        job_uuid = uuid.UUID(ref)
    except ValueError:
        raise not_found("job", ref) from None
    found = job_reads.job_detail(conn, job_uuid)
    if found is None or found.job.project_id != row.id:
        raise not_found("job", ref)
    return found


def organization_access(
    conn: Connection, viewer: UserRow, ref: str, *, lead: bool = False
) -> OrganizationRow:
    """The organization, or 404 to a caller who is neither a member nor a server admin; with
    ``lead``, 403 to a member who is not one of its leaders."""
    org = accounts.organization_get(conn, ref)
    role = None if org is None else accounts.role_of(conn, viewer.id, org.id)
    if org is None or not (viewer.admin or role):
        raise not_found("organization", ref)
    if lead and not viewer.admin and role != accounts.LEADER:
        raise forbidden(f"only a leader of organization {ref!r} may do this")
    return org


def user_access(conn: Connection, viewer: UserRow, ref: str) -> UserRow:
    """The user ``ref`` if the caller is that user or a server admin, else 404."""
    found = accounts.user_get(conn, ref)
    if found is None or not (viewer.admin or found.id == viewer.id):
        raise not_found("user", ref)
    return found


def require_plan_setter(user: UserRow, plan: Plan) -> None:
    """A new organization's plan: free for anyone, any other for a server admin only (403)."""
    if plan != Plan.FREE and not user.admin:
        raise forbidden("only a server admin may set a plan other than free")


def require_server_admin(user: UserRow) -> None:
    """The API's admin rule for a signed-in caller: 403 unless a server admin."""
    if not user.admin:
        raise forbidden("server admin permissions required")


def require_admin_viewer(user: UserRow | None, what: str) -> None:
    """The admin rule as the console's pages word it for ``what`` they show: an anonymous
    viewer is asked to sign in (401), a member is refused (403)."""
    if user is None:
        raise unauthorized(f"log in as a server admin to see {what}")
    if not user.admin:
        raise forbidden(f"{what} are shown to server admins only")


def members_project(conn: Connection, user: UserRow | None, ref: str, to: str) -> ProjectRow:
    """The project, for a signed-in caller who may change it; ``to`` says what an anonymous
    caller must sign in to do. An anonymous caller may write an unclaimed public project's
    runs, never start the server's own work for it or direct where it sends requests."""
    if user is None:
        raise unauthorized(f"sign in to {to}")
    return project_access(conn, user, ref, write=True)
