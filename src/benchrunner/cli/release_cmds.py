"""``benchrunner admin release <verb>``: publish runner releases (docs/decisions/runner-releases.md)
and list them."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from benchrunner.api.releases import Release
from benchrunner.cli import output
from benchrunner.cli.config import resolve
from benchrunner.cli.options import Host, Json, Token
from benchrunner.core.releases import UpdateChannel, sha256_file_hex, wheel_version

release_app = typer.Typer(
    help="Runner releases: wheels that runners update themselves to (server API, admin).",
    no_args_is_help=True,
)

Channel = Annotated[
    UpdateChannel,
    typer.Option(
        help="stable: runners on an older version update; canary: runners on any other "
        "build update."
    ),
]


def _record(release: Release) -> None:
    output.print_record(
        [
            ("version", release.version),
            ("channel", release.channel),
            ("checksum", release.checksum),
            ("file", release.filename),
            ("size", output.size_cell(release.size)),
            ("created", output.when(release.created)),
            ("uuid", release.uuid),
        ]
    )


@release_app.command("publish")
def release_publish(
    wheel: Annotated[
        Path,
        typer.Argument(
            exists=True, dir_okay=False, readable=True, help="The benchrunner wheel (.whl)."
        ),
    ],
    channel: Channel = "stable",
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """Publish WHEEL as the channel's newest runner release; its version is read from the file
    name and its SHA-256 computed here (the server checks both). Linux runners of the channel
    install it between jobs and restart, unless started with --no-update."""
    version = wheel_version(wheel.name)
    if version is None:
        raise ValueError(f"{wheel.name} is not a benchrunner wheel file name")
    data = wheel.read_bytes()
    with resolve(host, token).client() as client:
        release = client.publish_release(
            wheel.name, data, channel=channel, version=version, checksum=sha256_file_hex(data)
        )
    output.show(release, as_json, _record)


@release_app.command("list")
def release_list(
    channel: Annotated[
        UpdateChannel | None, typer.Option(help="Only this channel.", show_default=False)
    ] = None,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """Published releases, newest first: the first of each channel is the one runners get."""
    with resolve(host, token).client() as client:
        found = client.list_releases(channel)
    if as_json:
        output.print_json(found)
        return
    rows = [(r.channel, r.version, r.checksum[:12], output.when(r.created), r.uuid) for r in found]
    columns = ("channel", "version", "checksum", "created", "uuid")
    output.print_table(columns, rows, title="Releases")
