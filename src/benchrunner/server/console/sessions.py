"""The session cookie: an opaque token whose hash is a ``console_session`` row (revocable on the
server), sent only over HTTPS (or to loopback, which browsers treat as secure), never to
scripts, and not on cross-site subrequests."""

from __future__ import annotations

import datetime as dt

from fastapi import Response

from benchrunner.server.store.sessions import SESSION_COOKIE

COOKIE = SESSION_COOKIE
LIFETIME = dt.timedelta(days=7)


def set_session_cookie(response: Response, token: str) -> None:
    response.set_cookie(
        COOKIE,
        token,
        max_age=int(LIFETIME.total_seconds()),
        path="/",
        secure=True,
        httponly=True,
        samesite="lax",
    )


def clear_session_cookie(response: Response) -> None:
    response.delete_cookie(COOKIE, path="/", secure=True, httponly=True, samesite="lax")
