"""The API's admin rule, for console pages: anonymous viewers are asked to sign in (401),
members are refused (403)."""

from __future__ import annotations

from benchrunner.server.console.viewer import Viewer
from benchrunner.server.http.errors import forbidden, unauthorized


def require_admin(viewer: Viewer, what: str) -> None:
    if not viewer.signed_in:
        raise unauthorized(f"log in as a server admin to see {what}")
    if not viewer.is_admin:
        raise forbidden(f"{what} are shown to server admins only")
