"""An organization's members and their roles (Bencher's ``/v0/organizations/{organization}/
members``): its members and server admins list and read them; its leaders (and server admins)
add existing users by email, change their role and remove them. An organization always keeps a
leader: its last one can be neither demoted nor removed (409).
"""

from __future__ import annotations

from fastapi import APIRouter, Response
from sqlalchemy.engine import Connection

from benchrunner.api.organizations import Member, MemberPatch, NewMember
from benchrunner.server.access import organization_access
from benchrunner.server.http.answers import ANSWERED
from benchrunner.server.http.errors import conflict, not_found
from benchrunner.server.routes.deps import Ctx, Page, User, paginate
from benchrunner.server.store import accounts
from benchrunner.server.store.accounts import MemberRow, OrganizationRow
from benchrunner.server.views.resources import member_view

router = APIRouter(tags=["members"])

MEMBERS = "/v0/organizations/{organization}/members"


def _member_or_404(conn: Connection, org: OrganizationRow, ref: str) -> MemberRow:
    found = accounts.user_get(conn, ref)
    member = None if found is None else accounts.member_get(conn, org.id, found.id)
    if member is None:
        raise not_found("member", ref)
    return member


def _keep_a_leader(conn: Connection, org: OrganizationRow, member: MemberRow) -> None:
    """409 if ``member`` is the organization's last leader (the caller holds its lock)."""
    if member.role == accounts.LEADER and accounts.leader_count(conn, org.id) == 1:
        raise conflict(
            f"{member.user.email} is the last leader of organization {org.slug!r}: "
            "make another member a leader first"
        )


@router.get(MEMBERS, **ANSWERED)
async def list_members(
    organization: str, user: User, ctx: Ctx, response: Response, pages: Page
) -> list[Member]:
    def unit(conn: Connection) -> list[Member]:
        org = organization_access(conn, user, organization)
        return [member_view(m) for m in accounts.member_list(conn, org.id)]

    return paginate(response, await ctx.db.read(unit), pages)


@router.get(MEMBERS + "/{user}", **ANSWERED)
async def get_member(organization: str, user: str, caller: User, ctx: Ctx) -> Member:
    def unit(conn: Connection) -> Member:
        org = organization_access(conn, caller, organization)
        return member_view(_member_or_404(conn, org, user))

    return await ctx.db.read(unit)


@router.post(MEMBERS, status_code=201, **ANSWERED)
async def add_member(organization: str, body: NewMember, user: User, ctx: Ctx) -> Member:
    """Add an existing user (a server admin creates users) with a role."""

    def unit(conn: Connection) -> Member:
        org = organization_access(conn, user, organization, lead=True)
        added = accounts.user_by_email(conn, body.email)
        if added is None:
            raise not_found("user with email", body.email)
        if not accounts.member_add(conn, org.id, added.id, body.role, ctx.clock.now()):
            raise conflict(f"{body.email} is already a member of organization {org.slug!r}")
        member = accounts.member_get(conn, org.id, added.id)
        assert member is not None  # added in this transaction
        return member_view(member)

    return await ctx.db.write(unit)


@router.patch(MEMBERS + "/{user}", **ANSWERED)
async def update_member(
    organization: str, user: str, body: MemberPatch, caller: User, ctx: Ctx
) -> Member:
    def unit(conn: Connection) -> Member:
        org = organization_access(conn, caller, organization, lead=True)
        accounts.organization_lock(conn, org.id)
        member = _member_or_404(conn, org, user)
        if body.role is not None and body.role != member.role:
            _keep_a_leader(conn, org, member)
            accounts.member_set_role(conn, org.id, member.user.id, body.role)
        return member_view(_member_or_404(conn, org, user))

    return await ctx.db.write(unit)


@router.delete(MEMBERS + "/{user}", status_code=204)
async def remove_member(organization: str, user: str, caller: User, ctx: Ctx) -> Response:
    def unit(conn: Connection) -> None:
        org = organization_access(conn, caller, organization, lead=True)
        accounts.organization_lock(conn, org.id)
        member = _member_or_404(conn, org, user)
        _keep_a_leader(conn, org, member)
        accounts.member_remove(conn, org.id, member.user.id)

    await ctx.db.write(unit)
    return Response(status_code=204)
