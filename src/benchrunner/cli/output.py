"""Everything the CLI prints: JSON for machines, Rich tables for people, one-line errors.

Data goes to stdout; progress, hints and errors go to stderr, so ``--json`` output can be piped.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from pydantic import BaseModel
from rich.console import Console
from rich.table import Table
from rich.text import Text

from benchrunner.cli.sizes import format_size
from benchrunner.client import Page

PIPE_WIDTH = 200
Shown = TypeVar("Shown")


def out() -> Console:
    # Built per call so that a swapped sys.stdout (tests, redirection) is always honoured.
    # Piped output is not squeezed into Rich's default 80 columns.
    piped = not sys.stdout.isatty() and "COLUMNS" not in os.environ
    return Console(highlight=False, width=PIPE_WIDTH if piped else None)


def err() -> Console:
    return Console(stderr=True, highlight=False)


def as_sent(data: object) -> object:
    """``data`` as the JSON the server sent: an answer model as the fields it was given."""
    if isinstance(data, BaseModel):
        return data.model_dump(mode="json", exclude_unset=True)
    if isinstance(data, list):
        return [as_sent(item) for item in data]
    if isinstance(data, dict):
        return {key: as_sent(value) for key, value in data.items()}
    return data


def print_json(data: object) -> None:
    sys.stdout.write(json.dumps(as_sent(data), indent=2) + "\n")


def show(data: Shown, as_json: bool, render: Callable[[Shown], None]) -> None:
    """``data`` as JSON with ``--json``, else as ``render`` draws it."""
    if as_json:
        print_json(data)
    else:
        render(data)


def one_line(text: str) -> str:
    return " ".join(str(text).split())


def error(message: str) -> None:
    """``error: <message>`` in red on stderr, on one line whatever the terminal width."""
    err().print(Text(f"error: {one_line(message)}", style="red"), soft_wrap=True)


def warning(message: str) -> None:
    err().print(Text(f"warning: {one_line(message)}", style="yellow"), soft_wrap=True)


def note(message: str) -> None:
    """A hint for the person at the terminal, never part of the data."""
    err().print(Text(message, style="dim"), soft_wrap=True)


def cell(value: object) -> str:
    """A JSON value as a table cell: ``-`` for nothing, yes/no for booleans."""
    if value is None or value == "":
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict | list):
        return json.dumps(value)
    return str(value)


def when(value: object, *, precise: bool = False) -> str:
    """An API timestamp (ISO 8601, UTC) as ``2026-01-02 03:04:05``, milliseconds if precise."""
    if not isinstance(value, str):
        return cell(value)
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        return value
    text = parsed.strftime("%Y-%m-%d %H:%M:%S")
    return f"{text}.{parsed.microsecond // 1000:03d}" if precise else text


def size_cell(value: object) -> str:
    return format_size(value) if isinstance(value, int) and not isinstance(value, bool) else "-"


def print_table(
    columns: Sequence[str],
    rows: Iterable[Sequence[object]],
    *,
    title: str | None = None,
    total: int | None = None,
) -> None:
    table = Table(title=title, title_justify="left", header_style="bold")
    for column in columns:
        # Fold, never truncate: people copy UUIDs out of these tables.
        table.add_column(column, overflow="fold")
    count = 0
    for row in rows:
        table.add_row(*(cell(v) for v in row))
        count += 1
    if count == 0:
        note(f"no {title.lower() if title else 'rows'}")
        return
    out().print(table)
    if total is not None and total > count:
        note(f"showing {count} of {total}; use --page and --per-page for more")


def show_page(
    found: Page[Shown],
    as_json: bool,
    columns: Sequence[str],
    row: Callable[[Shown], Sequence[object]],
    *,
    title: str,
) -> None:
    """A page of a list endpoint as JSON with ``--json``, else as a table of ``row`` of each
    item with the server's total."""
    if as_json:
        print_json(found)
    else:
        print_table(columns, [row(item) for item in found], title=title, total=found.total)


def print_record(fields: Iterable[tuple[str, object]], *, title: str | None = None) -> None:
    """One resource as an aligned ``field  value`` list."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    for name, value in fields:
        table.add_row(name, cell(value))
    if title:
        out().print(Text(title, style="bold underline"))
    out().print(table)
