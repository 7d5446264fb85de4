"""``GET/POST /v0/auth/oci/token``: the Docker token flow's token endpoint.

Basic credentials (any username, a user API token as the password) or none at all (anonymous:
pull on public projects) are exchanged for a short-lived registry JWT whose ``access`` is the
requested scopes cut down to what the caller may do. A project the caller may not see is granted
nothing, exactly like one that does not exist. ``POST`` takes the OAuth2 password grant as a form.
"""

from __future__ import annotations

import base64
import datetime as dt
from typing import Any
from urllib.parse import parse_qs

from fastapi import APIRouter, Request
from sqlalchemy.engine import Connection

from benchrunner.core.tokens import is_api_token
from benchrunner.server.http.deps import Ctx
from benchrunner.server.http.errors import ApiError, bad_request
from benchrunner.server.registry.access import (
    TOKEN_PATH,
    Scope,
    granted_actions,
    public_base,
    user_token,
)
from benchrunner.server.registry.references import is_name
from benchrunner.server.store import accounts
from benchrunner.server.store.accounts import UserRow

router = APIRouter(tags=["registry"])
MAX_FORM_BYTES = 64 * 1024


def _refused() -> ApiError:
    return ApiError(
        401,
        "invalid credentials: use any username and a benchrunner API token as the password",
        error_code="unauthorized",
        headers={"WWW-Authenticate": 'Basic realm="benchrunner"'},
    )


def _basic_password(authorization: str | None) -> str | None:
    if not authorization:
        return None
    scheme, _, value = authorization.partition(" ")
    if scheme.lower() != "basic":
        raise _refused()
    try:
        decoded = base64.b64decode(value.strip(), validate=True).decode()
    except ValueError:  # bad base64, a non-ASCII header, or credentials that are not UTF-8
        raise _refused() from None
    _, _, password = decoded.partition(":")
    return password


async def _issue(
    ctx: Ctx, request: Request, password: str | None, scopes: list[str]
) -> dict[str, Any]:
    now = ctx.clock.now()
    viewer: UserRow | None = None
    if password:
        if not is_api_token(password):
            raise _refused()
        viewer = await ctx.db.read(accounts.user_by_api_token, password, now)
        if viewer is None:
            raise _refused()
    wanted = [s for s in (Scope.parse(text) for text in scopes) if s is not None]
    for scope in wanted:
        if not is_name(scope.name):
            raise bad_request(f"invalid repository name {scope.name!r} in scope")

    def grants(conn: Connection) -> list[tuple[str, frozenset[str]]]:
        return [granted_actions(conn, viewer, scope) for scope in wanted]

    ttl = dt.timedelta(seconds=ctx.settings.registry_token_ttl)
    token = user_token(
        ctx.secret_key,
        issuer=public_base(ctx, request),
        subject=str(viewer.uuid) if viewer else "anonymous",
        grants=await ctx.db.read(grants),
        ttl=ttl,
        now=now,
    )
    return {
        "token": token,
        "access_token": token,
        "expires_in": int(ttl.total_seconds()),
        "issued_at": now.astimezone(dt.UTC).isoformat().replace("+00:00", "Z"),
    }


@router.get(TOKEN_PATH)
async def token_get(ctx: Ctx, request: Request) -> dict[str, Any]:
    password = _basic_password(request.headers.get("authorization"))
    return await _issue(ctx, request, password, request.query_params.getlist("scope"))


@router.post(TOKEN_PATH)
async def token_post(ctx: Ctx, request: Request) -> dict[str, Any]:
    body = await request.body()
    if len(body) > MAX_FORM_BYTES:
        raise bad_request("token request form too large")
    form = parse_qs(body.decode("utf-8", "replace"))
    grant = (form.get("grant_type") or [""])[0]
    if grant != "password":
        raise bad_request("grant_type must be password (refresh tokens are not issued)")
    password = (form.get("password") or [""])[0] or None
    scopes = [s for text in form.get("scope", []) for s in text.split(" ") if s]
    return await _issue(ctx, request, password, scopes)
