"""Every ``benchrunner`` command the documentation shows names a command and options the CLI
has, in code blocks and in running text alike, run by a test or not: a page cannot keep a
renamed subcommand or flag (the blocks that can run against a server are run by
tests/system/test_guides.py and tests/system/test_quickstart.py)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import typer

from benchrunner.cli.main import app
from tests.harness import REPO

pytestmark = pytest.mark.engine_independent

BLOCK = re.compile(r"```(?:sh|console)\n(.*?)```", re.S)
SPAN = re.compile(r"`(benchrunner [^`]+)`")
END = re.compile(r"\s#|\||>|;|&&")
"""Where a command's own words end: a comment, a pipe, a redirection, the next command."""


def pages() -> list[Path]:
    generated = REPO / "docs" / "reference" / "cli.md"  # written from the CLI itself
    found = [p for p in sorted((REPO / "docs").rglob("*.md")) if p != generated]
    return [*found, REPO / "README.md"]


def shown_commands(text: str) -> list[str]:
    """The ``benchrunner ...`` commands of a page: each line of its shell blocks (continued
    lines joined, a console's ``$`` dropped) and each inline code span."""
    commands = []
    for body in BLOCK.findall(text):
        for line in body.replace("\\\n", " ").splitlines():
            line = line.strip().removeprefix("$ ")
            if line.startswith("benchrunner "):
                commands.append(line)
    commands.extend(SPAN.findall(text.replace("\n", " ")))
    return [END.split(command)[0].strip() for command in commands]


def unknown_words(words: list[str]) -> list[str]:
    """The subcommand or ``--option`` of ``benchrunner WORDS`` the CLI does not have.
    Optional parts written ``[--option VALUE]`` are checked like the others."""
    command: Any = typer.main.get_command(app)
    while hasattr(command, "commands") and words and not words[0].startswith("-"):
        if words[0] not in command.commands:
            return [words[0]]
        command, words = command.commands[words[0]], words[1:]
    options = {name for param in command.params for name in [*param.opts, *param.secondary_opts]}
    flags = [word.strip("[]").split("=")[0] for word in words]
    return [flag for flag in flags if flag.startswith("--") and flag not in options]


def test_the_scan_finds_the_commands() -> None:
    found = [c for page in pages() for c in shown_commands(page.read_text())]
    assert len(found) > 50, found
    assert unknown_words(["run", "--no-such-flag"]) == ["--no-such-flag"]
    assert unknown_words(["no-such-command"]) == ["no-such-command"]


@pytest.mark.parametrize("page", pages(), ids=lambda page: page.relative_to(REPO).as_posix())
def test_every_command_shown_exists(page: Path) -> None:
    unknown = []
    for command in shown_commands(page.read_text()):
        words = shlex.split(command)[1:]
        if missing := unknown_words(words):
            unknown.append(f"{command}: {missing}")
    assert not unknown, "\n".join(unknown)
