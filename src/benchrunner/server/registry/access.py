"""Who may do what on a repository: Docker-token-flow JWTs and the ``401`` challenge.

A request to ``/v2/`` carries ``Authorization: Bearer <jwt>``, signed with the server secret,
``aud`` oci, whose ``access`` claim lists ``{"type": "repository", "name", "actions"}`` entries.
Entries name a project by UUID (grants are only ever issued under the UUID, so a slug and a UUID
reach the same repository). The runner's claim token has exactly this shape.

Answers, in order: a name outside the spec's grammar -> ``400 NAME_INVALID`` (whoever asks: it
says nothing about any project, and such a name must never reach a query or the challenge
header); no or bad token -> ``401 UNAUTHORIZED`` with a challenge naming the scope the
client should ask for; a token that never asked about this repository -> the same ``401``; a
token whose entry for it grants nothing (what the token endpoint issues for a project the caller
may not see, or one that does not exist) -> ``404 NAME_UNKNOWN``, so outsiders cannot tell a
private project from a missing one; an entry granting some actions but not this one -> ``403
DENIED``.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

import jwt
from fastapi import Request
from sqlalchemy.engine import Connection

from benchrunner.server.access import project_access
from benchrunner.server.context import ServerContext
from benchrunner.server.http.errors import ApiError
from benchrunner.server.registry.errors import RegistryError
from benchrunner.server.registry.references import check_name
from benchrunner.server.runners.pull_tokens import ALGORITHM, OCI_AUDIENCE
from benchrunner.server.store import accounts
from benchrunner.server.store.accounts import ProjectRow

TOKEN_PATH = "/v0/auth/oci/token"  # noqa: S105 - a URL path, not a secret
KNOWN_ACTIONS = ("pull", "push", "delete")


@dataclass(frozen=True)
class Scope:
    """One ``repository:<name>:<actions>`` item of a token request."""

    name: str
    actions: frozenset[str]

    @classmethod
    def parse(cls, text: str) -> Scope | None:
        """None for scopes of other resource types (``registry:catalog:*``), which we ignore."""
        kind, _, rest = text.partition(":")
        name, _, actions = rest.rpartition(":")
        if kind != "repository" or not name:
            return None
        asked = set(actions.split(","))
        if "*" in asked:  # the token spec's "every action"
            asked |= set(KNOWN_ACTIONS)
        return cls(name, frozenset(a for a in asked if a in KNOWN_ACTIONS))

    def render(self) -> str:
        return f"repository:{self.name}:{','.join(sorted(self.actions))}"


def public_base(ctx: ServerContext, request: Request) -> str:
    return (ctx.settings.public_url or str(request.base_url)).rstrip("/")


def challenge(ctx: ServerContext, request: Request, scope: Scope | None) -> dict[str, str]:
    base = public_base(ctx, request)
    value = f'Bearer realm="{base}{TOKEN_PATH}",service="{urlsplit(base).netloc}"'
    if scope is not None:
        value += f',scope="{scope.render()}"'
    return {"WWW-Authenticate": value}


def user_token(
    secret: str,
    *,
    issuer: str,
    subject: str,
    grants: Iterable[tuple[str, frozenset[str]]],
    ttl: dt.timedelta,
    now: dt.datetime,
) -> str:
    """A user's (or an anonymous caller's) registry token with exactly these grants."""
    claims = {
        "iss": issuer,
        "sub": subject,
        "aud": OCI_AUDIENCE,
        "iat": int(now.timestamp()),
        "nbf": int(now.timestamp()),
        "exp": int((now + ttl).timestamp()),
        "jti": uuid.uuid4().hex,
        "access": [
            {"type": "repository", "name": name, "actions": sorted(actions)}
            for name, actions in grants
        ],
    }
    return jwt.encode(claims, secret, algorithm=ALGORITHM)


def granted_actions(
    conn: Connection, viewer: accounts.UserRow | None, scope: Scope
) -> tuple[str, frozenset[str]]:
    """What the caller may do on the scope's project, under the name the grant is issued for:
    the project's UUID when the caller may see it, else the name asked for with no actions."""
    try:
        project = project_access(conn, viewer, scope.name, write=False)
    except ApiError:
        return scope.name, frozenset()
    allowed = {"pull"}
    if viewer is not None:  # pushing always needs a user, even to an unclaimed project
        try:
            project_access(conn, viewer, scope.name, write=True, found=project)
            allowed |= {"push", "delete"}
        except ApiError:
            pass
    return str(project.uuid), scope.actions & frozenset(allowed)


@dataclass(frozen=True)
class Caller:
    subject: str
    access: dict[str, frozenset[str]]


def _bearer_claims(ctx: ServerContext, request: Request) -> Caller | None:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    try:
        claims = jwt.decode(
            token.strip(),
            ctx.secret_key,
            algorithms=[ALGORITHM],
            audience=OCI_AUDIENCE,
            options={"require": ["exp", "aud"]},
        )
    except jwt.PyJWTError:
        return None
    access: dict[str, frozenset[str]] = {}
    for entry in claims.get("access") or []:
        if isinstance(entry, dict) and entry.get("type") == "repository":
            name, actions = str(entry.get("name")), entry.get("actions") or []
            access[name] = access.get(name, frozenset()) | frozenset(map(str, actions))
    return Caller(str(claims.get("sub")), access)


def authenticated(ctx: ServerContext, request: Request) -> Caller:
    """The caller of ``GET /v2/``: any valid registry token, else 401 with a challenge."""
    caller = _bearer_claims(ctx, request)
    if caller is None:
        raise RegistryError(
            "UNAUTHORIZED", "authentication required", headers=challenge(ctx, request, None)
        )
    return caller


async def authorize(
    ctx: ServerContext, request: Request, name: str, action: str
) -> tuple[ProjectRow, Caller]:
    """The project behind repository ``name`` if the caller's token allows ``action`` on it."""
    check_name(name)
    scope = Scope(name, frozenset({"pull", action}))  # what a client should ask the token for
    unauthorized = RegistryError(
        "UNAUTHORIZED", "authentication required", headers=challenge(ctx, request, scope)
    )
    caller = _bearer_claims(ctx, request)
    if caller is None:
        raise unauthorized
    project = await ctx.db.read(accounts.project_get, name)
    keys = {name} if project is None else {name, str(project.uuid)}
    entries = [caller.access[key] for key in keys if key in caller.access]
    if not entries:
        raise unauthorized
    actions = frozenset().union(*entries)
    if project is None or not actions:
        raise RegistryError("NAME_UNKNOWN", f"repository {name!r} not known to registry")
    if action not in actions:
        raise RegistryError("DENIED", f"this token may not {action} repository {name!r}")
    return project, caller


def may(caller: Caller, project: ProjectRow, action: str) -> bool:
    """Whether the caller's token grants ``action`` on ``project`` (for cross-repository mount)."""
    return action in caller.access.get(str(project.uuid), frozenset())
