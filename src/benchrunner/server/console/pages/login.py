"""Signing in (email and password, or an API token pasted once) and out.

A successful sign-in starts a new server-side session (any session the browser had is ended
first, so a session cannot be fixed in advance) and redirects to ``next`` — a console path
only, never another site. Password guessing is cut off by
:mod:`benchrunner.server.console.throttle` (429 after ten failures for an email or from an
address within five minutes). Signing out deletes the session row: the cookie is then worthless
everywhere, even if it was copied.
"""

from __future__ import annotations

import asyncio
import math
from typing import Annotated
from urllib.parse import urlsplit

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy.engine import Connection

from benchrunner.core import passwords
from benchrunner.core.tokens import is_api_token
from benchrunner.server.console import sessions
from benchrunner.server.console.csrf import CsrfChecked
from benchrunner.server.console.nav import PREFIX
from benchrunner.server.console.templating import render
from benchrunner.server.console.throttle import LoginThrottle
from benchrunner.server.console.viewer import ANONYMOUS, CurrentViewer
from benchrunner.server.context import ServerContext
from benchrunner.server.http.deps import Ctx
from benchrunner.server.store import accounts
from benchrunner.server.store import sessions as session_store
from benchrunner.server.store.accounts import UserRow

router = APIRouter()

WRONG_PASSWORD = "The email or the password is wrong."  # noqa: S105 (a message)
WRONG_TOKEN = "That API token is not valid (or has expired)."  # noqa: S105 (a message)


def safe_next(value: str | None) -> str:
    """``value`` if it is a console path on this server, else the dashboard."""
    if not value:
        return PREFIX
    parts = urlsplit(value)
    path = parts.path
    if parts.scheme or parts.netloc or "\\" in value or path.startswith("//"):
        return PREFIX
    if path != PREFIX and not path.startswith(PREFIX + "/"):
        return PREFIX
    if path.startswith(f"{PREFIX}/login") or path.startswith(f"{PREFIX}/logout"):
        return PREFIX
    return path + (f"?{parts.query}" if parts.query else "")


def _login_page(
    request: Request,
    next_url: str,
    *,
    email: str = "",
    error: str | None = None,
    field: str = "",
    status_code: int | None = None,
) -> HTMLResponse:
    context = {"next": next_url, "email": email, "error": error, "error_field": field}
    status = status_code or (400 if error else 200)
    return render(request, ANONYMOUS, "login.html", context, status_code=status)


def _throttle_keys(request: Request, email: str) -> tuple[str, str]:
    address = request.client.host if request.client else "unknown"
    return f"email:{email.lower()}", f"ip:{address}"


@router.get("/console/login", response_class=HTMLResponse)
async def login_form(request: Request, viewer: CurrentViewer, next: str | None = None) -> Response:
    if viewer.signed_in:
        return RedirectResponse(safe_next(next), status_code=303)
    return _login_page(request, safe_next(next))


async def _start_session(
    request: Request, ctx: ServerContext, user: UserRow, next_url: str
) -> Response:
    old = request.cookies.get(sessions.COOKIE)

    def unit(conn: Connection) -> str:
        if old:
            session_store.session_delete(conn, old)
        return session_store.session_create(conn, user.id, ctx.clock.now(), sessions.LIFETIME)

    token = await ctx.db.write(unit)
    response = RedirectResponse(next_url, status_code=303)
    sessions.set_session_cookie(response, token)
    return response


@router.post("/console/login", response_class=HTMLResponse)
async def login_with_password(
    request: Request,
    ctx: Ctx,
    _csrf: CsrfChecked,
    email: Annotated[str, Form(max_length=320)] = "",
    password: Annotated[str, Form(max_length=passwords.MAX_LENGTH)] = "",
    next: Annotated[str, Form(max_length=2048)] = "",
) -> Response:
    next_url = safe_next(next)
    email = email.strip()
    if not email or not password:
        return _login_page(
            request,
            next_url,
            email=email,
            error="Enter your email and your password.",
            field="email" if not email else "password",
        )
    throttle: LoginThrottle = request.app.state.login_throttle
    keys = _throttle_keys(request, email)
    wait = throttle.retry_after(keys, ctx.monotonic.monotonic())
    if wait > 0:
        seconds = math.ceil(wait)
        page = _login_page(
            request,
            next_url,
            email=email,
            error=f"Too many failed attempts: try again in {seconds} s.",
            field="password",
            status_code=429,
        )
        page.headers["Retry-After"] = str(seconds)
        return page
    found = await ctx.db.read(accounts.user_with_password_hash, email)
    user, password_hash = found if found else (None, None)
    # Verified even for an unknown email (against a decoy), so timing tells nothing.
    if not await asyncio.to_thread(passwords.verify, password_hash, password) or user is None:
        throttle.failed(keys, ctx.monotonic.monotonic())
        return _login_page(request, next_url, email=email, error=WRONG_PASSWORD, field="password")
    throttle.succeeded(keys[0])
    return await _start_session(request, ctx, user, next_url)


@router.post("/console/login/token", response_class=HTMLResponse)
async def login_with_token(
    request: Request,
    ctx: Ctx,
    _csrf: CsrfChecked,
    token: Annotated[str, Form(max_length=256)] = "",
    next: Annotated[str, Form(max_length=2048)] = "",
) -> Response:
    next_url = safe_next(next)
    token = token.strip()
    user = None
    if is_api_token(token):
        user = await ctx.db.read(accounts.user_by_api_token, token, ctx.clock.now())
    if user is None:
        return _login_page(request, next_url, error=WRONG_TOKEN, field="token")
    return await _start_session(request, ctx, user, next_url)


@router.post("/console/logout")
async def logout(request: Request, ctx: Ctx, _csrf: CsrfChecked) -> Response:
    token = request.cookies.get(sessions.COOKIE)
    if token:
        await ctx.db.write(session_store.session_delete, token)
    response = RedirectResponse(PREFIX, status_code=303)
    sessions.clear_session_cookie(response)
    return response
