"""``benchrunner branch|testbed|measure|benchmark list`` and ``benchmark ignore|unignore``.

The four are a project's history dimensions, created on first use by ``benchrunner run``; one
list command serves them all, with the columns that only some of them have.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Annotated

import typer

from benchrunner.api.dimensions import HistoryDimension
from benchrunner.cli import output
from benchrunner.cli.config import project_client
from benchrunner.cli.options import LIST_PER_PAGE, Host, Json, Page, PerPage, Project, Token
from benchrunner.client import Dimension

branch_app = typer.Typer(help="Branches of a project's history.", no_args_is_help=True)
testbed_app = typer.Typer(help="Testbeds of a project's history.", no_args_is_help=True)
measure_app = typer.Typer(help="Measures of a project's history, with units.", no_args_is_help=True)
benchmark_app = typer.Typer(
    help="Benchmarks of a project's history; ignore one to stop judging it.",
    no_args_is_help=True,
)

BenchmarkRef = Annotated[str, typer.Argument(metavar="NAME", help="Benchmark name, slug or UUID.")]
NameFilter = Annotated[str | None, typer.Option("--name", help="Only the one with this name.")]

EXTRA_COLUMNS: dict[Dimension, tuple[str, ...]] = {
    "branches": ("head_reset",),
    "testbeds": (),
    "measures": ("units",),
    "benchmarks": ("ignored",),
}
"""What a dimension has besides name, slug, UUID and creation time."""


def dimension_columns(dimension: Dimension) -> tuple[str, ...]:
    extra = (key.replace("_", " ") for key in EXTRA_COLUMNS[dimension])
    return ("name", "slug", *extra, "uuid", "created")


def dimension_row(dimension: Dimension, item: HistoryDimension) -> tuple[object, ...]:
    extra = tuple(
        output.when(getattr(item, key)) if key == "head_reset" else getattr(item, key)
        for key in EXTRA_COLUMNS[dimension]
    )
    return (item.name, item.slug, *extra, item.uuid, output.when(item.created))


def _list_command(dimension: Dimension) -> Callable[..., None]:
    def list_dimension(
        name: NameFilter = None,
        page: Page = 1,
        per_page: PerPage = LIST_PER_PAGE,
        project: Project = None,
        host: Host = None,
        token: Token = None,
        as_json: Json = False,
    ) -> None:
        with project_client(host, token, project) as (client, project_ref):
            found = client.list_dimensions(
                project_ref, dimension, name=name, page=page, per_page=per_page
            )
        output.show_page(
            found,
            as_json,
            dimension_columns(dimension),
            functools.partial(dimension_row, dimension),
            title=dimension.capitalize(),
        )

    list_dimension.__doc__ = f"The project's {dimension}, by name."
    return list_dimension


_APPS: tuple[tuple[typer.Typer, Dimension], ...] = (
    (branch_app, "branches"),
    (testbed_app, "testbeds"),
    (measure_app, "measures"),
    (benchmark_app, "benchmarks"),
)
for _app, _dimension in _APPS:
    _app.command("list")(_list_command(_dimension))


def _set_ignored(
    benchmark: str,
    ignored: bool,
    project: str | None,
    host: str | None,
    token: str | None,
    as_json: bool,
) -> None:
    with project_client(host, token, project) as (client, project_ref):
        updated = client.update_benchmark(project_ref, benchmark, ignored=ignored)
    if as_json:
        output.print_json(updated)
        return
    state = "ignored: its metrics are stored, never judged" if ignored else "judged again"
    output.out().print(f"benchmark {updated.name} is {state}", soft_wrap=True, markup=False)


@benchmark_app.command("ignore")
def benchmark_ignore(
    benchmark: BenchmarkRef,
    project: Project = None,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """Stop judging the benchmark against thresholds; its metrics are still stored (Bencher's
    only way is renaming it with a `-bencher-ignore` suffix)."""
    _set_ignored(benchmark, True, project, host, token, as_json)


@benchmark_app.command("unignore")
def benchmark_unignore(
    benchmark: BenchmarkRef,
    project: Project = None,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """Judge an ignored benchmark against thresholds again."""
    _set_ignored(benchmark, False, project, host, token, as_json)
