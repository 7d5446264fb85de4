"""The API's request dependencies: the caller and pagination. Those the console shares (the
server context, the services and the lifecycle, ``MAX_PAGE``, ``origin_of``) are
``http/deps.py``'s, named here too for the routes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, TypeVar

from fastapi import Depends, Query, Request, Response

from benchrunner.core.tokens import bearer, is_api_token
from benchrunner.server.access import require_server_admin
from benchrunner.server.http.deps import MAX_PAGE as MAX_PAGE
from benchrunner.server.http.deps import Ctx as Ctx
from benchrunner.server.http.deps import Life as Life
from benchrunner.server.http.deps import Svc as Svc
from benchrunner.server.http.deps import origin_of as origin_of
from benchrunner.server.http.errors import unauthorized
from benchrunner.server.store import accounts, sessions
from benchrunner.server.store.accounts import UserRow

MAX_PER_PAGE = 255
DEFAULT_PER_PAGE = 8


async def optional_user(request: Request, ctx: Ctx) -> UserRow | None:
    header = request.headers.get("authorization")
    if header is None:
        return await _console_reader(request, ctx)
    token = bearer(header)
    if token is None:
        # Read as anonymous, an empty "Bearer $TOKEN" would answer a puzzling 403 or 404.
        raise unauthorized(
            "the Authorization header is empty or malformed: "
            "send 'Authorization: Bearer <API token>'"
        )
    if not is_api_token(token):
        raise unauthorized("invalid API token")
    now = ctx.clock.now()
    known, user = accounts.user_by_api_token_known(ctx.db.lookups, token, now)
    if not known:
        user = await ctx.db.read(accounts.user_by_api_token, token, now)
    if user is None:
        raise unauthorized("invalid or expired API token")
    return user


async def _console_reader(request: Request, ctx: Ctx) -> UserRow | None:
    """The console's signed-in user on a read without a token, so that the console's export
    links (CSV, JSON) open a private project's data too; a write always needs a token (the API
    has no CSRF check, and a same-site cookie still rides along on a top-level navigation)."""
    session_token = request.cookies.get(sessions.SESSION_COOKIE)
    if not session_token or request.method not in ("GET", "HEAD"):
        return None
    found = await ctx.db.read(sessions.session_user, session_token, ctx.clock.now())
    return None if found is None else found.user


async def required_user(user: Annotated[UserRow | None, Depends(optional_user)]) -> UserRow:
    if user is None:
        raise unauthorized()
    return user


async def admin_user(user: Annotated[UserRow, Depends(required_user)]) -> UserRow:
    require_server_admin(user)
    return user


MaybeUser = Annotated[UserRow | None, Depends(optional_user)]
User = Annotated[UserRow, Depends(required_user)]
Admin = Annotated[UserRow, Depends(admin_user)]


@dataclass(frozen=True)
class Pagination:
    """One page of a list: ``page`` counts from 1, ``per_page`` items each."""

    page: int
    per_page: int

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.per_page


async def pagination(
    page: Annotated[int, Query(ge=1, le=MAX_PAGE, description="page number, from 1")] = 1,
    per_page: Annotated[
        int, Query(ge=1, le=MAX_PER_PAGE, description="items per page")
    ] = DEFAULT_PER_PAGE,
) -> Pagination:
    """Every list's ``page`` and ``per_page``, bounded here so that no list can compute an
    offset the database cannot hold (a larger page is a 400, naming the bound)."""
    return Pagination(page, per_page)


Page = Annotated[Pagination, Depends(pagination)]


Item = TypeVar("Item")


def paginate(response: Response, items: list[Item], pages: Pagination) -> list[Item]:
    response.headers["X-Total-Count"] = str(len(items))
    return items[pages.offset : pages.offset + pages.per_page]
