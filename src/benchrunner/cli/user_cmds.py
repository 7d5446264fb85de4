"""``benchrunner user create`` (server admins) and ``benchrunner user token create|list|revoke``
(a user's own API tokens)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from benchrunner.api.users import Token as ApiToken
from benchrunner.api.users import User
from benchrunner.cli import output
from benchrunner.cli.config import resolve
from benchrunner.cli.options import LIST_PER_PAGE, Host, Json, Name, Page, PerPage, Token
from benchrunner.cli.passwords import read_password

user_app = typer.Typer(help="Users and their API tokens.", no_args_is_help=True)


def _user_record(user: User) -> None:
    output.print_record(
        [
            ("slug", user.slug),
            ("name", user.name),
            ("email", user.email),
            ("uuid", user.uuid),
            ("admin", user.admin),
        ]
    )


@user_app.command("create")
def user_create(
    name: Name,
    email: Annotated[str, typer.Option(help="The user's email; they sign in with it.")],
    password_file: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE",
            help="Set the console password to the first line of FILE.",
            exists=True,
            dir_okay=False,
            readable=True,
        ),
    ] = None,
    admin: Annotated[bool, typer.Option("--admin", help="Make the user a server admin.")] = False,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """Create a user (server admins); with --password-file they can sign in to the console."""
    password = None if password_file is None else read_password(password_file)
    with resolve(host, token).client() as client:
        created = client.create_user(name, email, password=password, admin=admin)
    output.show(created, as_json, _user_record)


# -- API tokens ---------------------------------------------------------------------------------

token_app = typer.Typer(
    help="API tokens of a user (your own; any user's for a server admin).", no_args_is_help=True
)
user_app.add_typer(token_app, name="token")

UserRef = Annotated[str, typer.Argument(metavar="USER", help="User slug or UUID.")]


def _expiration(value: object) -> str:
    return output.when(value) if value else "never"


def _token_record(token: ApiToken) -> None:
    output.print_record(
        [
            ("name", token.name),
            ("uuid", token.uuid),
            ("created", output.when(token.created)),
            ("expiration", _expiration(token.expiration)),
            ("revoked", output.when(token.revoked)),
        ]
    )


@token_app.command("create")
def token_create(
    user: UserRef,
    name: Name,
    ttl: Annotated[
        int | None,
        typer.Option(min=1, max=2**32 - 1, help="Seconds until it expires; default: never."),
    ] = None,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """Create an API token for USER and print it: it is shown only this once."""
    with resolve(host, token).client() as client:
        created = client.create_token(user, name, ttl=ttl)
    if as_json:
        output.print_json(created)
        return
    _token_record(created)
    output.out().print(f"token: {created.token}", soft_wrap=True, markup=False)
    output.warning("the token is shown only this once; store it now")


@token_app.command("list")
def token_list(
    user: UserRef,
    revoked: Annotated[bool, typer.Option("--revoked", help="List the revoked ones.")] = False,
    page: Page = 1,
    per_page: PerPage = LIST_PER_PAGE,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """USER's API tokens (never the tokens themselves)."""
    with resolve(host, token).client() as client:
        found = client.list_tokens(user, revoked=revoked, page=page, per_page=per_page)
    output.show_page(
        found,
        as_json,
        ("name", "created", "expiration", "revoked", "uuid"),
        lambda t: (
            t.name,
            output.when(t.created),
            _expiration(t.expiration),
            output.when(t.revoked),
            t.uuid,
        ),
        title="Tokens",
    )


@token_app.command("revoke")
def token_revoke(
    user: UserRef,
    uuid: Annotated[str, typer.Argument(metavar="TOKEN", help="The token's UUID.")],
    host: Host = None,
    token: Token = None,
) -> None:
    """Revoke one of USER's API tokens: it authenticates no one from now on."""
    with resolve(host, token).client() as client:
        client.revoke_token(user, uuid)
    output.note(f"token {uuid} revoked")
