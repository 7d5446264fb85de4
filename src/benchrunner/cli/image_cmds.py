"""``benchrunner image push``: a local image into the server's registry, and how ``run --image``
turns what the user typed into a digest."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TextColumn,
    TransferSpeedColumn,
)

from benchrunner import images
from benchrunner.cli import output
from benchrunner.cli.config import CliSettings, require_project, resolve
from benchrunner.cli.options import Host, Json, Project, Token
from benchrunner.cli.sizes import format_size
from benchrunner.protocol import is_digest
from benchrunner.registry_client import RegistryClient

image_app = typer.Typer(no_args_is_help=True, help="Push benchmark images to the server.")
_TAG = re.compile(r"[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}")


def split_source(source: str) -> tuple[Path, str | None]:
    """``PATH`` or ``PATH:NAME`` (NAME picks a tagged image inside a layout or tarball)."""
    path = Path(source)
    if path.exists():
        return path, None
    head, sep, name = source.rpartition(":")
    if sep and head and Path(head).exists():
        return Path(head), name
    raise ValueError(f"{source} is not an image directory or tarball (nothing at that path)")


@dataclass
class _Tally:
    sent: int = 0
    sent_bytes: int = 0
    skipped: int = 0

    def summary(self) -> str:
        return (
            f"{self.sent} blob(s) pushed ({format_size(self.sent_bytes)}), "
            f"{self.skipped} already in the registry"
        )


def _progress_hooks(
    progress: Progress, tally: _Tally
) -> Callable[[images.Blob, bool], Callable[[int], None] | None]:
    def on_blob(blob: images.Blob, skipped: bool) -> Callable[[int], None] | None:
        label = blob.digest.removeprefix("sha256:")[:12]
        if skipped:
            tally.skipped += 1
            progress.console.print(f"{label}: already in the registry", markup=False)
            return None
        tally.sent += 1
        tally.sent_bytes += blob.size
        task = progress.add_task(label, total=blob.size)
        return lambda n: progress.advance(task, n)

    return on_blob


def push_local(
    settings: CliSettings, source: str, tag: str | None, *, own_tag: bool, quiet: bool = False
) -> tuple[str, str | None]:
    """Push the image at ``source`` to the settings' project as ``tag`` (or, with ``own_tag``,
    the name the image carries when it is a valid tag); its manifest (or index) digest and tag.
    """
    project = require_project(settings)
    path, name = split_source(source)
    image = images.load(path, name)
    if tag is None and own_tag and image.name and _TAG.fullmatch(image.name):
        tag = image.name
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
    )
    tally = _Tally()
    with (
        RegistryClient(settings.host, settings.token) as registry,
        Progress(*columns, console=output.err(), disable=quiet, transient=False) as progress,
    ):
        digest = registry.push_image(project, image, tag, _progress_hooks(progress, tally))
    if not quiet:
        output.note(tally.summary())
    return digest, tag


def resolve_image(settings: CliSettings, image: str) -> str:
    """A digest for ``--image``: as given, pushed from a local path, or a tag looked up now."""
    if is_digest(image):
        return image
    if Path(image).exists() or (":" in image and Path(image.rpartition(":")[0]).exists()):
        return push_local(settings, image, None, own_tag=False)[0]
    project = require_project(settings)
    with RegistryClient(settings.host, settings.token) as registry:
        return registry.resolve(project, image)


@image_app.command("push")
def push(
    source: Annotated[
        str,
        typer.Argument(
            metavar="PATH[:NAME]",
            help="OCI layout directory, OCI archive or docker save tarball; NAME picks one of "
            "several images in it.",
        ),
    ],
    project: Project = None,
    tag: Annotated[
        str | None,
        typer.Option(help="Tag to push as [default: the image's own name, else by digest only]."),
    ] = None,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """Push an image to the project's repository in the server's registry and print its digest.

    Blobs the registry already holds are skipped. Run it with `benchrunner run --image DIGEST`.
    """
    settings = resolve(host, token, project)
    digest, chosen_tag = push_local(settings, source, tag, own_tag=True, quiet=as_json)
    if as_json:
        output.print_json({"digest": digest, "tag": chosen_tag, "project": settings.project})
        return
    output.out().print(digest, markup=False)
