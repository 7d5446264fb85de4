"""CSRF protection for every console form: a signed double-submit token.

Each browser gets a random, HTTP-only ``benchrunner_csrf`` cookie; a form carries
HMAC(server secret, that cookie + the session cookie) in its hidden ``csrf_token`` field (htmx
requests may send it as the ``X-CSRF-Token`` header instead). Another site can make the browser
send the cookies but can neither read them nor compute the HMAC, and signing in or out changes
the token, so a form from before is refused.

In a template: ``{{ csrf_input }}`` inside every ``<form method="post">``. In its handler:
a parameter ``_csrf: CsrfChecked``.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Annotated

from fastapi import Depends, Request, Response

from benchrunner.server.console import sessions
from benchrunner.server.http.deps import Ctx
from benchrunner.server.http.errors import forbidden

COOKIE = "benchrunner_csrf"
FIELD = "csrf_token"
HEADER = "X-CSRF-Token"


def _sign(secret: str, browser: str, session: str) -> str:
    key = hashlib.sha256(f"console-csrf:{secret}".encode()).digest()
    return hmac.new(key, f"{browser}|{session}".encode(), hashlib.sha256).hexdigest()


def browser_secret(request: Request) -> str:
    """This browser's CSRF cookie, or a new one (``issue`` puts it on the response)."""
    existing: str | None = getattr(request.state, "csrf_browser", None)
    if existing is None:
        existing = request.cookies.get(COOKIE) or secrets.token_urlsafe(32)
        request.state.csrf_browser = existing
    return existing


def token_for(request: Request, secret: str) -> str:
    """The token this request's forms carry (signed over its browser and session cookies)."""
    return _sign(secret, browser_secret(request), request.cookies.get(sessions.COOKIE) or "")


def issue(request: Request, response: Response) -> None:
    """Set the CSRF cookie if the browser has none yet."""
    if request.cookies.get(COOKIE) is None:
        response.set_cookie(
            COOKIE, browser_secret(request), path="/", secure=True, httponly=True, samesite="lax"
        )


async def require_csrf(request: Request, ctx: Ctx) -> None:
    """Refuse (403) a state-changing request whose token is missing or does not match."""
    submitted = request.headers.get(HEADER)
    if submitted is None:
        value = (await request.form()).get(FIELD)
        submitted = value if isinstance(value, str) else None
    browser = request.cookies.get(COOKIE)
    if not submitted or browser is None:
        raise forbidden("this form has no CSRF token; reload the page and submit it again")
    expected = _sign(ctx.secret_key, browser, request.cookies.get(sessions.COOKIE) or "")
    if not hmac.compare_digest(submitted, expected):
        raise forbidden("this form's CSRF token is stale; reload the page and submit it again")


CsrfChecked = Annotated[None, Depends(require_csrf)]
