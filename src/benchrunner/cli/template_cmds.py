"""``benchrunner template list``: the approved scripts the server accepts for ``run --template``."""

from __future__ import annotations

import typer

from benchrunner.api.server import TemplateArg
from benchrunner.cli import output
from benchrunner.cli.config import resolve
from benchrunner.cli.options import Host, Json, Token

template_app = typer.Typer(
    help="Approved templates that `run --template` accepts.", no_args_is_help=True
)


def describe_arg(name: str, arg: TemplateArg) -> str:
    """``ms: int 0..60000 = 10``; ``mode: choice fast|slow``; ``n: int (required)``."""
    text = f"{name}: {arg.type}"
    if arg.min is not None or arg.max is not None:
        text += f" {output.cell(arg.min)}..{output.cell(arg.max)}"
    if arg.choices:
        text += " " + "|".join(arg.choices)
    if arg.default is not None:
        text += f" = {output.cell(arg.default)}"
    elif arg.required:
        text += " (required)"
    return text


@template_app.command("list")
def template_list(host: Host = None, token: Token = None, as_json: Json = False) -> None:
    """The server's templates with their arguments and time limits."""
    with resolve(host, token).client() as client:
        found = client.templates()
    if as_json:
        output.print_json(found)
        return
    rows = [
        (
            t.name,
            "\n".join(describe_arg(n, a) for n, a in t.args.items()) or None,
            f"{t.timeout} s",
            t.description,
        )
        for t in found
    ]
    output.print_table(("template", "arguments", "timeout", "description"), rows, title="Templates")
