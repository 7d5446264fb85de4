"""``benchrunner user create``: users, created by a server admin through the API."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from benchrunner.cli import output
from benchrunner.cli.config import resolve
from benchrunner.cli.options import Host, Json, Name, Token
from benchrunner.cli.passwords import read_password
from benchrunner.client import JsonObject

user_app = typer.Typer(help="Users (server admins only).", no_args_is_help=True)


def _user_record(user: JsonObject) -> None:
    output.print_record([(k, user.get(k)) for k in ("slug", "name", "email", "uuid", "admin")])


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
    """Create a user; with --password-file they can sign in to the console."""
    password = None if password_file is None else read_password(password_file)
    with resolve(host, token).client() as client:
        created = client.create_user(name, email, password=password, admin=admin)
    output.show(created, as_json, _user_record)
