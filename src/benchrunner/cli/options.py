"""Typer options shared by the commands that talk to a server."""

from __future__ import annotations

from typing import Annotated

import typer

from benchrunner.client import MAX_PER_PAGE

_CONNECTION = "Connection"

Host = Annotated[
    str | None,
    typer.Option(
        "--host",
        help="Server URL. Else $BENCHRUNNER_HOST, the config file, http://127.0.0.1:8080.",
        show_default=False,
        rich_help_panel=_CONNECTION,
    ),
]
Token = Annotated[
    str | None,
    typer.Option(
        "--token",
        help="API token. Else $BENCHRUNNER_TOKEN, then the config file.",
        show_default=False,
        rich_help_panel=_CONNECTION,
    ),
]
Project = Annotated[
    str | None,
    typer.Option(
        "--project",
        "-p",
        help="Project slug or UUID. Else $BENCHRUNNER_PROJECT, then the config file.",
        show_default=False,
    ),
]
Json = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON only, to stdout.")]
Page = Annotated[int, typer.Option("--page", min=1, help="Page of the list, from 1.")]
PerPage = Annotated[
    int,
    typer.Option("--per-page", min=1, max=MAX_PER_PAGE, help="Items per page."),
]
LIST_PER_PAGE = 50
"""Lists in a terminal show more than the API's default of 8 per page."""

Ref = Annotated[str, typer.Argument(metavar="REF", help="Slug or UUID.")]
Name = Annotated[str, typer.Argument(metavar="NAME", help="Display name (1-64 characters).")]
OrgRef = Annotated[str, typer.Argument(metavar="ORG", help="Organization slug or UUID.")]
SpecRef = Annotated[str, typer.Argument(metavar="SPEC", help="Spec slug or UUID.")]
