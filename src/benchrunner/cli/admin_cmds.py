"""``benchrunner admin bootstrap``: an admin and an API token, straight into the database;
``benchrunner admin release``: runner releases, through the API; ``backup`` and ``restore``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from benchrunner.cli import output
from benchrunner.cli.backup_cmds import backup, restore
from benchrunner.cli.options import Json
from benchrunner.cli.passwords import read_password
from benchrunner.cli.release_cmds import release_app
from benchrunner.cli.server_cmds import settings_from

admin_app = typer.Typer(
    help="Server administration: bootstrap (the database itself), runner releases, backup "
    "and restore.",
    no_args_is_help=True,
)
admin_app.add_typer(release_app, name="release")
admin_app.command("backup")(backup)
admin_app.command("restore")(restore)


@admin_app.command("bootstrap")
def bootstrap(
    email: Annotated[str, typer.Option(help="The admin's email; created if new.")],
    db: Annotated[
        str | None,
        typer.Option(
            metavar="URL",
            help="Database URL [default: sqlite:///<data-dir>/benchrunner.db].",
            show_default=False,
        ),
    ] = None,
    data_dir: Annotated[
        Path | None,
        typer.Option(
            help="Data directory of the default SQLite database [default: .benchrunner].",
            show_default=False,
        ),
    ] = None,
    password_file: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE",
            help="Set the admin's console password to the first line of FILE.",
            exists=True,
            dir_okay=False,
            readable=True,
        ),
    ] = None,
    as_json: Json = False,
) -> None:
    """Migrate the database, make EMAIL a server admin, and print a new API token for it.

    Reads BENCHRUNNER_DB and BENCHRUNNER_DATA_DIR like the server does, so both find the same
    database. Only the token goes to stdout: TOKEN=$(benchrunner admin bootstrap --email ...).
    """
    password = None if password_file is None else read_password(password_file)
    settings = settings_from({"db": db, "data_dir": data_dir})
    if not settings.db:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
    from benchrunner.server.admin.bootstrap import bootstrap_admin

    token = bootstrap_admin(settings.database_url(), email, password=password)
    if as_json:
        output.print_json({"token": token})
        return
    output.out().print(token, markup=False, soft_wrap=True)
    output.note(f"admin {email}: the token is shown only this once")
