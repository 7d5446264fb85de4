"""``benchrunner perf``: the history of chosen series (branches x testbeds x benchmarks x
measures) over a time range, as tables, JSON, CSV or a PNG plot (Bencher's perf query)."""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path
from typing import Annotated, Literal

import typer

from benchrunner.api.perf import Perf
from benchrunner.cli import output
from benchrunner.cli.config import project_client
from benchrunner.cli.history_format import PERF_COLUMNS, parse_time, perf_rows, series_title
from benchrunner.cli.options import Host, Json, Project, Token
from benchrunner.client import PerfQuery

PerfOutput = Literal["table", "json", "csv", "img"]
_SERIES = "Series"
_OUTPUT = "Output"


def perf_output(
    *, as_json: bool, as_csv: bool, image: Path | None, to_file: Path | None, title: str | None
) -> PerfOutput:
    """Which answer the flags ask for. Raises ``typer.BadParameter`` for flags that do not go
    together: more than one of ``--json``/``--csv``/``--image``, ``--output`` without
    ``--csv``, ``--title`` without ``--image``."""
    chosen = [
        flag for flag, on in (("--json", as_json), ("--csv", as_csv), ("--image", image)) if on
    ]
    if len(chosen) > 1:
        raise typer.BadParameter(f"{' and '.join(chosen)} do not go together: choose one")
    if to_file is not None and not as_csv:
        raise typer.BadParameter(
            "--output writes the CSV: give --csv with it (--image takes its file)"
        )
    if title is not None and image is None:
        raise typer.BadParameter("--title names the plot: give --image with it")
    if as_json:
        return "json"
    if as_csv:
        return "csv"
    return "img" if image is not None else "table"


def _time(text: str | None, flag: str, *, end: bool) -> dt.datetime | None:
    if text is None:
        return None
    try:
        return parse_time(text, end=end)
    except ValueError as exc:
        raise typer.BadParameter(f"{flag}: {exc}") from None


def perf(
    branch: Annotated[
        list[str], typer.Option(help="Branch (repeat for several).", rich_help_panel=_SERIES)
    ],
    testbed: Annotated[
        list[str], typer.Option(help="Testbed (repeat for several).", rich_help_panel=_SERIES)
    ],
    benchmark: Annotated[
        list[str], typer.Option(help="Benchmark (repeat for several).", rich_help_panel=_SERIES)
    ],
    measure: Annotated[
        list[str], typer.Option(help="Measure (repeat for several).", rich_help_panel=_SERIES)
    ],
    start: Annotated[
        str | None,
        typer.Option(
            help="From this date or ISO 8601 time (UTC unless it says); default a year before "
            "--end.",
            rich_help_panel=_SERIES,
        ),
    ] = None,
    end: Annotated[
        str | None,
        typer.Option(
            help="Up to this date (its whole day) or ISO 8601 time; default now.",
            rich_help_panel=_SERIES,
        ),
    ] = None,
    as_csv: Annotated[
        bool, typer.Option("--csv", help="Print the CSV export.", rich_help_panel=_OUTPUT)
    ] = False,
    to_file: Annotated[
        Path | None,
        typer.Option(
            "--output", help="Write the CSV to this file, not stdout.", rich_help_panel=_OUTPUT
        ),
    ] = None,
    image: Annotated[
        Path | None,
        typer.Option(
            help="Write the plot (PNG: history, threshold band, alerts) to this file.",
            rich_help_panel=_OUTPUT,
        ),
    ] = None,
    title: Annotated[
        str | None, typer.Option(help="The plot's title.", rich_help_panel=_OUTPUT)
    ] = None,
    project: Project = None,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """The history of each branch x testbed x benchmark x measure series (names, slugs or
    UUIDs): every metric with its version, baseline, limits and alert, as a table per series.
    `--json` prints the API's answer, `--csv` its CSV export, `--image FILE` writes its plot."""
    kind = perf_output(as_json=as_json, as_csv=as_csv, image=image, to_file=to_file, title=title)
    query = PerfQuery(
        branches=branch,
        testbeds=testbed,
        benchmarks=benchmark,
        measures=measure,
        start_time=_time(start, "--start", end=False),
        end_time=_time(end, "--end", end=True),
        title=title,
    )
    with project_client(host, token, project, timeout=120) as (client, project_ref):
        if kind == "csv" or kind == "img":
            exported = client.perf_export(project_ref, query, kind)
        else:
            found = client.perf(project_ref, query)
    if kind == "json":
        output.print_json(found)
    elif kind == "table":
        print_perf(found)
    elif kind == "img":
        assert image is not None
        image.write_bytes(exported.content)
        output.note(f"wrote the plot to {image} ({len(exported.content)} bytes)")
    elif to_file is None:
        sys.stdout.write(exported.text)
    else:
        to_file.write_text(exported.text, encoding="utf-8")
        output.note(f"wrote the CSV to {to_file}")


def print_perf(found: Perf) -> None:
    """A table per series, oldest point first; a series without points says so."""
    for series in found.results:
        rows = perf_rows(series)
        if rows:
            output.print_table(PERF_COLUMNS, rows, title=series_title(series))
        else:
            output.note(f"{series_title(series)}: no metrics in this time range")
