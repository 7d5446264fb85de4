"""Users: a server admin creates them, optionally with a console password."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter
from pydantic import Field
from sqlalchemy.engine import Connection

from benchrunner.core import passwords
from benchrunner.server.errors import bad_request, conflict
from benchrunner.server.routes.bodies import ApiBody
from benchrunner.server.routes.deps import Admin, Ctx
from benchrunner.server.store import accounts
from benchrunner.server.views import user_view

router = APIRouter(tags=["users"])


class NewUser(ApiBody):
    name: str = Field(min_length=1, max_length=64)
    email: str = Field(min_length=3, max_length=320, pattern=r"^[^@\s]+@[^@\s]+$")
    password: str | None = Field(
        default=None,
        min_length=passwords.MIN_LENGTH,
        max_length=passwords.MAX_LENGTH,
        description="the console password (argon2-hashed; never shown again)",
        json_schema_extra={"writeOnly": True},
    )
    admin: bool = False


@router.post("/v0/users", status_code=201)
async def create_user(body: NewUser, _admin: Admin, ctx: Ctx) -> dict[str, Any]:
    password_hash = None
    if body.password is not None:
        try:
            password_hash = await asyncio.to_thread(passwords.hash_password, body.password)
        except passwords.PasswordRejected as exc:
            raise bad_request(f"password: {exc}") from None

    def unit(conn: Connection) -> dict[str, Any]:
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
