"""Who is looking at a console page: anonymous, a member of some organizations, or an admin.

The console decides what a viewer may see with the API's own rules
(:func:`benchrunner.server.access.project_access`): public projects are read by anyone,
private ones by their organization's members and server admins; anything else is a 404.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.engine import Connection

from benchrunner.server.access import project_access
from benchrunner.server.console import sessions
from benchrunner.server.http.deps import Ctx
from benchrunner.server.http.errors import ApiError
from benchrunner.server.store import sessions as session_store
from benchrunner.server.store.accounts import ProjectRow, UserRow


class Role(enum.Enum):
    ANONYMOUS = "anonymous"
    MEMBER = "member"
    ADMIN = "admin"


@dataclass(frozen=True)
class Viewer:
    """The signed-in user (None: anonymous) and the session that signed them in."""

    user: UserRow | None
    session_id: int | None = None

    @property
    def role(self) -> Role:
        if self.user is None:
            return Role.ANONYMOUS
        return Role.ADMIN if self.user.admin else Role.MEMBER

    @property
    def is_admin(self) -> bool:
        return self.role is Role.ADMIN

    @property
    def signed_in(self) -> bool:
        return self.user is not None


ANONYMOUS = Viewer(None)


async def current_viewer(request: Request, ctx: Ctx) -> Viewer:
    """The viewer of this request, from its session cookie; a missing, unknown, expired or
    revoked session is anonymous (the page then shows what anyone may see)."""
    token = request.cookies.get(sessions.COOKIE)
    if not token:
        return ANONYMOUS
    found = await ctx.db.read(session_store.session_user, token, ctx.clock.now())
    if found is None:
        return ANONYMOUS
    return Viewer(found.user, found.session_id)


CurrentViewer = Annotated[Viewer, Depends(current_viewer)]


def visible_project(conn: Connection, viewer: Viewer, ref: str) -> ProjectRow:
    """The project ``ref`` if the viewer may read it; else the API's 404 (never a 403 that
    would tell an outsider that a private project exists)."""
    return project_access(conn, viewer.user, ref, write=False)


def writable_project(conn: Connection, viewer: Viewer, ref: str) -> ProjectRow:
    """The project ``ref`` if the viewer may change it (cancel, rerun, submit, dismiss...): the
    API's rule, so a 404 when they may not see it and a 403 when they may only read it."""
    return project_access(conn, viewer.user, ref, write=True)


def may_change(conn: Connection, viewer: Viewer, project: ProjectRow) -> bool:
    """Whether the viewer may change the project (the API's write rule): pages show their
    forms only then; the POST handlers check again with ``writable_project``."""
    try:
        project_access(conn, viewer.user, project.slug, write=True, found=project)
    except ApiError:
        return False
    return True
