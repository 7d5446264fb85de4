"""Users and their API tokens (Bencher's ``/v0/users``): a server admin creates and lists
users; a user reads themselves and creates, lists and revokes their own API tokens (a server
admin, anyone's). Another user is not found (404) by a non-admin."""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, Query, Response
from sqlalchemy.engine import Connection

from benchrunner.api.users import CreatedToken, NewToken, NewUser, Token
from benchrunner.api.users import User as UserAnswer
from benchrunner.core import passwords
from benchrunner.server.access import user_access
from benchrunner.server.http.answers import ANSWERED
from benchrunner.server.http.errors import bad_request, conflict, not_found
from benchrunner.server.routes.deps import Admin, Ctx, Page, User, paginate
from benchrunner.server.store import accounts
from benchrunner.server.views.resources import created_token_view, token_view, user_view

router = APIRouter(tags=["users"])


@router.post("/v0/users", status_code=201, **ANSWERED)
async def create_user(body: NewUser, _admin: Admin, ctx: Ctx) -> UserAnswer:
    password_hash = None
    if body.password is not None:
        try:
            password_hash = await asyncio.to_thread(passwords.hash_password, body.password)
        except passwords.PasswordRejected as exc:
            raise bad_request(f"password: {exc}") from None

    def unit(conn: Connection) -> UserAnswer:
        user = accounts.user_create(
            conn,
            body.email,
            body.name,
            admin=body.admin,
            password_hash=password_hash,
            now=ctx.clock.now(),
        )
        if user is None:
            raise conflict(f"a user with email {body.email!r} exists")
        return user_view(user)

    return await ctx.db.write(unit)


@router.get("/v0/users", **ANSWERED)
async def list_users(_admin: Admin, ctx: Ctx, response: Response, pages: Page) -> list[UserAnswer]:
    def unit(conn: Connection) -> list[UserAnswer]:
        return [user_view(u) for u in accounts.user_list(conn)]

    return paginate(response, await ctx.db.read(unit), pages)


@router.get("/v0/users/{user}", **ANSWERED)
async def get_user(user: str, caller: User, ctx: Ctx) -> UserAnswer:
    return await ctx.db.read(lambda conn: user_view(user_access(conn, caller, user)))


@router.post("/v0/users/{user}/tokens", status_code=201, **ANSWERED)
async def create_token(user: str, body: NewToken, caller: User, ctx: Ctx) -> CreatedToken:
    """A new API token: the answer's ``token`` is shown this once (only its hash is kept)."""

    def unit(conn: Connection) -> CreatedToken:
        owner = user_access(conn, caller, user)
        now = ctx.clock.now()
        expiration = None if body.ttl is None else now + dt.timedelta(seconds=body.ttl)
        row, token = accounts.api_token_create(
            conn, owner.id, body.name, now, expiration=expiration
        )
        return created_token_view(row, token)

    return await ctx.db.write(unit)


@router.get("/v0/users/{user}/tokens", **ANSWERED)
async def list_tokens(
    user: str,
    caller: User,
    ctx: Ctx,
    response: Response,
    pages: Page,
    revoked: Annotated[
        bool, Query(description="list the revoked tokens instead of the others")
    ] = False,
) -> list[Token]:
    def unit(conn: Connection) -> list[Token]:
        owner = user_access(conn, caller, user)
        return [token_view(t) for t in accounts.api_token_list(conn, owner.id, revoked=revoked)]

    return paginate(response, await ctx.db.read(unit), pages)


@router.get("/v0/users/{user}/tokens/{token}", **ANSWERED)
async def get_token(user: str, token: UUID, caller: User, ctx: Ctx) -> Token:
    def unit(conn: Connection) -> Token:
        owner = user_access(conn, caller, user)
        found = accounts.api_token_get(conn, owner.id, token)
        if found is None:
            raise not_found("token", str(token))
        return token_view(found)

    return await ctx.db.read(unit)


@router.delete("/v0/users/{user}/tokens/{token}", status_code=204)
async def revoke_token(user: str, token: UUID, caller: User, ctx: Ctx) -> Response:
    """Revoke the token: it authenticates no one from now on (revoking it again is no error)."""

    def unit(conn: Connection) -> None:
        owner = user_access(conn, caller, user)
        if not accounts.api_token_revoke(conn, owner.id, token, ctx.clock.now()):
            raise not_found("token", str(token))

    await ctx.db.write(unit)
    return Response(status_code=204)
