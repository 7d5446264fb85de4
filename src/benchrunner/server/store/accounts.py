"""Users, API tokens, organizations, roles and projects."""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from uuid import UUID, uuid4

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.core import slugs
from benchrunner.core.tiers import Plan, priority_for
from benchrunner.core.tokens import hash_token, new_api_token
from benchrunner.server.store.conflicts import insert_or_skip, insert_with_slug
from benchrunner.server.store.direct import Direct
from benchrunner.server.store.lookups_cache import LookupCache, cached, changed, tag
from benchrunner.server.store.tables import (
    api_token,
    organization,
    organization_role,
    project,
    user,
)


@dataclass(frozen=True)
class UserRow:
    id: int
    uuid: UUID
    name: str
    slug: str
    email: str
    admin: bool
    token_name: str | None = None
    """The name of the API token this request authenticated with, if it did."""


def user_from_row(row: Any, token_name: str | None = None) -> UserRow:
    return UserRow(row.id, row.uuid, row.name, row.slug, row.email, bool(row.admin), token_name)


_USER_BY_EMAIL = sa.select(user).where(user.c.email == sa.bindparam("email"))


def user_get_or_create(
    conn: Connection, email: str, name: str, *, admin: bool, now: dt.datetime
) -> UserRow:
    """The user with this email, created if missing (and made an admin if ``admin``); a
    concurrent create of the same email yields the one row."""
    row = conn.execute(_USER_BY_EMAIL, {"email": email}).first()
    if row is None:
        values = {
            "uuid": uuid4(),
            "name": name[:64],
            "email": email,
            "admin": admin,
            "created": now,
            "modified": now,
        }
        user_id = insert_with_slug(conn, user, values, name)
        row = conn.execute(_USER_BY_EMAIL, {"email": email}).one()
        if user_id is not None:
            return user_from_row(row)
    if admin and not row.admin:
        conn.execute(user.update().where(user.c.id == row.id).values(admin=True, modified=now))
        changed(conn, tag("user", row.id))
        row = conn.execute(_USER_BY_EMAIL, {"email": email}).one()
    return user_from_row(row)


def user_create(
    conn: Connection,
    email: str,
    name: str,
    *,
    admin: bool,
    password_hash: str | None,
    now: dt.datetime,
) -> UserRow | None:
    """A new user, or None when the email is taken (also by a concurrent create)."""
    values = {
        "uuid": uuid4(),
        "name": name[:64],
        "email": email,
        "admin": admin,
        "password_hash": password_hash,
        "created": now,
        "modified": now,
    }
    if insert_with_slug(conn, user, values, name) is None:
        return None
    return user_from_row(conn.execute(_USER_BY_EMAIL, {"email": email}).one())


def user_set_password(conn: Connection, user_id: int, password_hash: str, now: dt.datetime) -> None:
    conn.execute(
        user.update().where(user.c.id == user_id).values(password_hash=password_hash, modified=now)
    )


def user_with_password_hash(conn: Connection, email: str) -> tuple[UserRow, str | None] | None:
    """The user with this email and their password hash (None: no password set), or None."""
    row = conn.execute(_USER_BY_EMAIL, {"email": email}).first()
    return (user_from_row(row), row.password_hash) if row else None


def user_by_email(conn: Connection, email: str) -> UserRow | None:
    row = conn.execute(_USER_BY_EMAIL, {"email": email}).first()
    return user_from_row(row) if row else None


def user_get(conn: Connection, ref: str) -> UserRow | None:
    row = select_by_ref(conn, user, ref)
    return user_from_row(row) if row else None


def user_list(conn: Connection) -> list[UserRow]:
    rows = conn.execute(sa.select(user).order_by(user.c.name, user.c.id))
    return [user_from_row(r) for r in rows]


@dataclass(frozen=True)
class TokenRow:
    """An API token as its user may see it again: never the token, only what describes it."""

    uuid: UUID
    user_uuid: UUID
    name: str
    created: dt.datetime
    expiration: dt.datetime | None
    revoked: dt.datetime | None


_TOKENS = sa.select(
    api_token.c.uuid,
    user.c.uuid.label("user_uuid"),
    api_token.c.name,
    api_token.c.created,
    api_token.c.expiration,
    api_token.c.revoked,
).join(user, user.c.id == api_token.c.user_id)


def _token(row: Any) -> TokenRow:
    return TokenRow(row.uuid, row.user_uuid, row.name, row.created, row.expiration, row.revoked)


def api_token_create(
    conn: Connection,
    user_id: int,
    name: str,
    now: dt.datetime,
    *,
    expiration: dt.datetime | None = None,
    make_token: Callable[[], str] = new_api_token,
) -> tuple[TokenRow, str]:
    """A new API token for the user, valid until ``expiration`` (None: until revoked); only
    its hash is stored, the token is returned this once."""
    token = make_token()
    token_uuid = uuid4()
    conn.execute(
        api_token.insert().values(
            uuid=token_uuid,
            user_id=user_id,
            name=name[:64],
            token_hash=hash_token(token),
            created=now,
            expiration=expiration,
        )
    )
    return _token(conn.execute(_TOKENS.where(api_token.c.uuid == token_uuid)).one()), token


def api_token_issue(
    conn: Connection,
    user_id: int,
    name: str,
    now: dt.datetime,
    make_token: Callable[[], str] = new_api_token,
) -> str:
    """A new API token for the user that never expires; the token, returned once."""
    return api_token_create(conn, user_id, name, now, make_token=make_token)[1]


def api_token_list(conn: Connection, user_id: int, *, revoked: bool) -> list[TokenRow]:
    """The user's tokens by name: the revoked ones with ``revoked``, else the others."""
    query = _TOKENS.where(
        api_token.c.user_id == user_id,
        api_token.c.revoked.is_not(None) if revoked else api_token.c.revoked.is_(None),
    )
    return [_token(r) for r in conn.execute(query.order_by(api_token.c.name, api_token.c.id))]


def api_token_get(conn: Connection, user_id: int, token_uuid: UUID) -> TokenRow | None:
    query = _TOKENS.where(api_token.c.user_id == user_id, api_token.c.uuid == token_uuid)
    row = conn.execute(query).first()
    return _token(row) if row else None


def api_token_revoke(conn: Connection, user_id: int, token_uuid: UUID, now: dt.datetime) -> bool:
    """Revoke the user's token (it authenticates no one from now on; revoking it again changes
    nothing); False if the user has no such token."""
    conn.execute(
        api_token.update()
        .where(
            api_token.c.user_id == user_id,
            api_token.c.uuid == token_uuid,
            api_token.c.revoked.is_(None),
        )
        .values(revoked=now)
    )
    changed(conn, tag("user", user_id))
    return api_token_get(conn, user_id, token_uuid) is not None


_USER_BY_TOKEN = Direct(
    sa.select(
        user,
        api_token.c.name.label("token_name"),
        api_token.c.expiration.label("token_expiration"),
    )
    .join(api_token, api_token.c.user_id == user.c.id)
    .where(api_token.c.token_hash == sa.bindparam("token_hash"), api_token.c.revoked.is_(None))
)


def _token_holder(conn: Connection, token_hash: str) -> tuple[UserRow, dt.datetime | None] | None:
    row = _USER_BY_TOKEN.first(conn, {"token_hash": token_hash})
    return None if row is None else (user_from_row(row, row.token_name), row.token_expiration)


def _token_key(token: str) -> tuple[str, str]:
    return ("token", hash_token(token))


def _unexpired(
    found: tuple[UserRow, dt.datetime | None] | None, now: dt.datetime
) -> UserRow | None:
    if found is None:
        return None
    holder, expiration = found
    return holder if expiration is None or expiration > now else None


def user_by_api_token(conn: Connection, token: str, now: dt.datetime) -> UserRow | None:
    """The user an unrevoked, unexpired API token authenticates, or None. Cached (revoking a
    token or changing its user drops the entry); the expiration is checked on every use."""
    key = _token_key(token)
    found = cached(
        conn,
        key,
        lambda: _token_holder(conn, key[1]),
        lambda held: [tag("user", held[0].id)],
    )
    return _unexpired(found, now)


def user_by_api_token_known(
    lookups: LookupCache, token: str, now: dt.datetime
) -> tuple[bool, UserRow | None]:
    """``user_by_api_token`` from the cache alone, on the event loop: (True, its answer) when
    the cache holds the token, else (False, None) and the caller runs ``user_by_api_token``."""
    known, found = lookups.known(_token_key(token))
    return (True, _unexpired(found, now)) if known else (False, None)


LEADER = "leader"
MEMBER = "member"
"""The two roles of an organization's members; its leaders manage its members and runners."""


@dataclass(frozen=True)
class OrganizationRow:
    id: int
    uuid: UUID
    name: str
    slug: str
    plan: Plan
    created: dt.datetime
    modified: dt.datetime


def _org(row: Any) -> OrganizationRow:
    return OrganizationRow(
        row.id, row.uuid, row.name, row.slug, Plan(row.plan), row.created, row.modified
    )


def organization_create(
    conn: Connection,
    name: str,
    plan: Plan,
    now: dt.datetime,
    *,
    leader_id: int | None,
    slug: str | None = None,
) -> OrganizationRow:
    """A new organization; a taken slug gets a random suffix."""
    values = {"uuid": uuid4(), "name": name, "plan": plan.value, "created": now, "modified": now}
    org_id = insert_with_slug(conn, organization, values, slug or name)
    assert org_id is not None  # the slug is the only unique column a create can meet
    if leader_id is not None:
        conn.execute(
            organization_role.insert().values(
                user_id=leader_id, organization_id=org_id, role=LEADER, created=now
            )
        )
    return _org(conn.execute(sa.select(organization).where(organization.c.id == org_id)).one())


@functools.cache
def _select_by(table: sa.Table, column: str) -> Direct:
    return Direct(sa.select(table).where(table.c[column] == sa.bindparam("ref")))


def ref_param(ref: str) -> tuple[str, object]:
    """A reference is a UUID if it parses as one, else a slug (docs/decisions/bencher-wire.md)."""
    try:
        return "uuid", UUID(ref)
    except ValueError:
        return "slug", ref


def select_by_ref(conn: Connection, table: sa.Table, ref: str) -> Any:
    """The row of ``table`` whose UUID or slug is ``ref``, or None; a prepared statement.
    A ref that is neither cannot match, and is not sent to the database (it may hold text
    PostgreSQL refuses, such as NUL)."""
    column, value = ref_param(ref)
    if column == "slug" and not slugs.is_slug(ref):
        return None
    return _select_by(table, column).first(conn, {"ref": value})


def organization_changed(conn: Connection, org_id: int) -> None:
    """The organization's row, members or roles change in this transaction (``changed``)."""
    changed(conn, tag("org", org_id))


def organization_get(conn: Connection, ref: str) -> OrganizationRow | None:
    row = select_by_ref(conn, organization, ref)
    return _org(row) if row else None


def organization_by_id(conn: Connection, org_id: int) -> OrganizationRow:
    row = _select_by(organization, "id").first(conn, {"ref": org_id})
    if row is None:
        raise LookupError(f"organization {org_id} does not exist")
    return _org(row)


def organization_list_for(conn: Connection, viewer: UserRow) -> list[OrganizationRow]:
    query = sa.select(organization).order_by(organization.c.name)
    if not viewer.admin:
        query = query.join(
            organization_role, organization_role.c.organization_id == organization.c.id
        ).where(organization_role.c.user_id == viewer.id)
    return [_org(r) for r in conn.execute(query)]


_ROLE = sa.select(organization_role.c.role).where(
    organization_role.c.user_id == sa.bindparam("user_id"),
    organization_role.c.organization_id == sa.bindparam("org_id"),
)
_ANY_MEMBER = Direct(
    sa.select(organization_role.c.id)
    .where(organization_role.c.organization_id == sa.bindparam("org_id"))
    .limit(1)
)


def role_of(conn: Connection, user_id: int, org_id: int) -> str | None:
    """The user's role in the organization, None for none. Cached (a change of the
    organization's members drops it)."""
    role = cached(
        conn,
        ("role", user_id, org_id),
        lambda: (conn.execute(_ROLE, {"user_id": user_id, "org_id": org_id}).scalar(),),
        lambda _: [tag("org", org_id), tag("user", user_id)],
    )
    assert role is not None
    found: str | None = role[0]
    return found


@dataclass(frozen=True)
class MemberRow:
    """A user and their role in one organization; ``created``: when they joined it."""

    user: UserRow
    role: str
    created: dt.datetime


_MEMBERS = (
    sa.select(
        user,
        organization_role.c.role.label("member_role"),
        organization_role.c.created.label("member_created"),
    )
    .join(organization_role, organization_role.c.user_id == user.c.id)
    .where(organization_role.c.organization_id == sa.bindparam("org_id"))
)


def _member(row: Any) -> MemberRow:
    return MemberRow(user_from_row(row), row.member_role, row.member_created)


def member_list(conn: Connection, org_id: int) -> list[MemberRow]:
    rows = conn.execute(_MEMBERS.order_by(user.c.name, user.c.id), {"org_id": org_id})
    return [_member(r) for r in rows]


def member_get(conn: Connection, org_id: int, user_id: int) -> MemberRow | None:
    row = conn.execute(_MEMBERS.where(user.c.id == user_id), {"org_id": org_id}).first()
    return _member(row) if row else None


def member_add(conn: Connection, org_id: int, user_id: int, role: str, now: dt.datetime) -> bool:
    """Make the user a member with ``role``; False if they already were one (perhaps by a
    concurrent add)."""
    statement = insert_or_skip(conn, organization_role, ("user_id", "organization_id"))
    values = {"user_id": user_id, "organization_id": org_id, "role": role, "created": now}
    added = conn.execute(statement.returning(organization_role.c.id), values).first() is not None
    if added:
        organization_changed(conn, org_id)
    return added


def _membership(org_id: int, user_id: int) -> sa.ColumnElement[bool]:
    return sa.and_(
        organization_role.c.organization_id == org_id, organization_role.c.user_id == user_id
    )


def member_set_role(conn: Connection, org_id: int, user_id: int, role: str) -> None:
    conn.execute(organization_role.update().where(_membership(org_id, user_id)).values(role=role))
    organization_changed(conn, org_id)


def member_remove(conn: Connection, org_id: int, user_id: int) -> None:
    conn.execute(organization_role.delete().where(_membership(org_id, user_id)))
    organization_changed(conn, org_id)


def organization_lock(conn: Connection, org_id: int) -> None:
    """Lock the organization's row until the transaction ends: taken by every change of its
    members, so that two leaders demoting each other at once on PostgreSQL cannot both pass
    the check that a leader remains (SQLite serializes writers anyway)."""
    conn.execute(sa.select(organization.c.id).where(organization.c.id == org_id).with_for_update())


def leader_count(conn: Connection, org_id: int) -> int:
    query = sa.select(sa.func.count()).where(
        organization_role.c.organization_id == org_id, organization_role.c.role == LEADER
    )
    return int(conn.execute(query).scalar_one())


def organization_is_claimed(conn: Connection, org_id: int) -> bool:
    """An organization with no members is unclaimed (docs/decisions/bencher-wire.md).
    Cached (a change of its members drops it)."""
    claimed = cached(
        conn,
        ("claimed", org_id),
        lambda: _ANY_MEMBER.first(conn, {"org_id": org_id}) is not None,
        lambda _: [tag("org", org_id)],
    )
    return bool(claimed)


_ORGANIZATION_CLAIMED = Direct(
    sa.select(
        organization,
        sa.exists()
        .where(organization_role.c.organization_id == organization.c.id)
        .label("claimed"),
    ).where(organization.c.id == sa.bindparam("org_id"))
)


def organization_for_job(conn: Connection, org_id: int) -> tuple[OrganizationRow, int]:
    """The organization and the priority a job of it gets if created now (its plan, and
    whether anyone has claimed it), in one statement. Cached (a change of the organization or
    its members drops it)."""
    found = cached(
        conn,
        ("org_for_job", org_id),
        lambda: _organization_for_job(conn, org_id),
        lambda _: [tag("org", org_id)],
    )
    if found is None:
        raise LookupError(f"organization {org_id} does not exist")
    return found


def _organization_for_job(conn: Connection, org_id: int) -> tuple[OrganizationRow, int] | None:
    row = _ORGANIZATION_CLAIMED.first(conn, {"org_id": org_id})
    if row is None:
        return None
    org = _org(row)
    return org, priority_for(org.plan, claimed=bool(row.claimed))


@dataclass(frozen=True)
class ProjectRow:
    id: int
    uuid: UUID
    organization_id: int
    name: str
    slug: str
    visibility: str
    created: dt.datetime
    modified: dt.datetime


def _project(row: Any) -> ProjectRow:
    return ProjectRow(
        row.id,
        row.uuid,
        row.organization_id,
        row.name,
        row.slug,
        row.visibility,
        row.created,
        row.modified,
    )


def _project_insert(
    conn: Connection,
    org_id: int,
    name: str,
    visibility: str,
    now: dt.datetime,
    slug: str,
    *,
    exact: bool,
) -> ProjectRow | None:
    values = {
        "uuid": uuid4(),
        "organization_id": org_id,
        "name": name,
        "visibility": visibility,
        "created": now,
        "modified": now,
    }
    project_id = insert_with_slug(conn, project, values, slug, exact=exact)
    if project_id is None:
        return None
    return _project(conn.execute(sa.select(project).where(project.c.id == project_id)).one())


def project_create(
    conn: Connection,
    org_id: int,
    name: str,
    visibility: str,
    now: dt.datetime,
    slug: str | None = None,
) -> ProjectRow:
    """A new project; a taken slug gets a random suffix."""
    created = _project_insert(conn, org_id, name, visibility, now, slug or name, exact=False)
    assert created is not None  # the slug is the only unique column a create can meet
    return created


def project_create_with_slug(
    conn: Connection, org_id: int, name: str, visibility: str, now: dt.datetime, slug: str
) -> ProjectRow | None:
    """A new project with exactly this slug, or None when the slug is taken (perhaps by a
    create racing this one, which has then committed)."""
    return _project_insert(conn, org_id, name, visibility, now, slug, exact=True)


def project_get(conn: Connection, ref: str) -> ProjectRow | None:
    """The project by UUID or slug, or None. Cached (a change of the project or its
    organization drops it)."""

    def load() -> ProjectRow | None:
        row = select_by_ref(conn, project, ref)
        return _project(row) if row else None

    return cached(
        conn,
        ("project", ref),
        load,
        lambda found: [tag("project", found.id), tag("org", found.organization_id)],
    )


def project_list(conn: Connection, org_id: int) -> list[ProjectRow]:
    rows = conn.execute(
        sa.select(project).where(project.c.organization_id == org_id).order_by(project.c.name)
    )
    return [_project(r) for r in rows]


def project_visible_to(viewer: UserRow | None) -> sa.ColumnElement[bool]:
    """The condition on ``project`` rows that ``viewer`` may read (the rule of
    ``access.can_see``): public ones, and private ones of the viewer's organizations;
    all of them for an admin."""
    if viewer is not None and viewer.admin:
        return sa.true()
    public = project.c.visibility == "public"
    if viewer is None:
        return public
    member_of = sa.select(organization_role.c.organization_id).where(
        organization_role.c.user_id == viewer.id
    )
    return sa.or_(public, project.c.organization_id.in_(member_of))


def project_list_visible(conn: Connection, viewer: UserRow | None) -> list[ProjectRow]:
    """Every project ``viewer`` may read, by name."""
    query = sa.select(project).where(project_visible_to(viewer))
    return [_project(r) for r in conn.execute(query.order_by(project.c.name, project.c.id))]
