"""``benchrunner org member <verb>``: an organization's members and their roles (its leaders
change them; its members may look)."""

from __future__ import annotations

from typing import Annotated, Literal

import typer

from benchrunner.api.organizations import Member
from benchrunner.cli import output
from benchrunner.cli.config import resolve
from benchrunner.cli.options import LIST_PER_PAGE, Host, Json, OrgRef, Page, PerPage, Token

member_app = typer.Typer(help="Members of an organization.", no_args_is_help=True)

UserRef = Annotated[str, typer.Argument(metavar="USER", help="User slug or UUID.")]
RoleOption = Annotated[
    Literal["leader", "member"],
    typer.Option(help="Leaders manage the organization's members and runners."),
]


def _member_record(member: Member) -> None:
    output.print_record(
        [
            ("slug", member.slug),
            ("name", member.name),
            ("email", member.email),
            ("role", member.role),
            ("uuid", member.uuid),
            ("member since", output.when(member.created)),
        ]
    )


@member_app.command("list")
def member_list(
    org: OrgRef,
    page: Page = 1,
    per_page: PerPage = LIST_PER_PAGE,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """Members of organization ORG and their roles."""
    with resolve(host, token).client() as client:
        found = client.list_members(org, page=page, per_page=per_page)
    output.show_page(
        found,
        as_json,
        ("slug", "email", "role", "uuid"),
        lambda m: (m.slug, m.email, m.role, m.uuid),
        title="Members",
    )


@member_app.command("add")
def member_add(
    org: OrgRef,
    email: Annotated[str, typer.Argument(metavar="EMAIL", help="An existing user's email.")],
    role: RoleOption = "member",
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """Add the user with EMAIL to organization ORG (its leaders)."""
    with resolve(host, token).client() as client:
        output.show(client.add_member(org, email, role), as_json, _member_record)


@member_app.command("set-role")
def member_set_role(
    org: OrgRef,
    user: UserRef,
    role: RoleOption,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """Change USER's role in organization ORG (its leaders; one leader always remains)."""
    with resolve(host, token).client() as client:
        output.show(client.update_member(org, user, role), as_json, _member_record)


@member_app.command("remove")
def member_remove(org: OrgRef, user: UserRef, host: Host = None, token: Token = None) -> None:
    """Remove USER from organization ORG (its leaders; one leader always remains)."""
    with resolve(host, token).client() as client:
        client.remove_member(org, user)
    output.note(f"{user} is no longer a member of {org}")
