"""The ``benchrunner`` command tree, and the one place errors become a red line and exit code 1."""

from __future__ import annotations

import os
import sys
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from benchrunner import __version__
from benchrunner.cli import output
from benchrunner.cli.admin_cmds import admin_app
from benchrunner.cli.alert_cmds import alert_app, baseline_app
from benchrunner.cli.bisect_cmds import bisect_app
from benchrunner.cli.calibrate_cmds import calibrate_app
from benchrunner.cli.dimension_cmds import benchmark_app, branch_app, measure_app, testbed_app
from benchrunner.cli.image_cmds import image_app
from benchrunner.cli.job_cmds import job_app
from benchrunner.cli.perf_cmds import perf
from benchrunner.cli.report_cmds import report_app
from benchrunner.cli.resource_cmds import org_app, project_app, spec_app
from benchrunner.cli.run_cmds import run
from benchrunner.cli.runner_cmds import runner_app
from benchrunner.cli.server_cmds import server
from benchrunner.cli.template_cmds import template_app
from benchrunner.cli.threshold_cmds import threshold_app
from benchrunner.cli.up import up
from benchrunner.cli.user_cmds import user_app
from benchrunner.cli.webhook_cmds import webhook_app
from benchrunner.client import ApiError

EXIT_ERROR = 1


def hint(exc: ApiError) -> str:
    """What to do about the errors people hit first."""
    if exc.status == 0:
        return " (is the server running? set --host, BENCHRUNNER_HOST or the config file)"
    if exc.status == 401:
        return " (pass --token, set BENCHRUNNER_TOKEN, or run benchrunner up)"
    if exc.error_code == "queue_full":
        return " (or pass --retry-on-busy to wait and submit again)"
    return ""


def _silence_stdout() -> None:
    """Point stdout at /dev/null so Python's exit-time flush does not fail on the closed pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no real file descriptor (tests capture stdout)
        pass


class ErrorReportingGroup(TyperGroup):
    """Turns the expected failures of any subcommand into ``error: <message>`` and exit 1:
    ``ApiError`` (the server said no or is unreachable), ``OSError`` (files, sockets, timeouts)
    and ``ValueError`` (invalid input found after parsing). Anything else is a bug and keeps its
    traceback.
    """

    def invoke(self, ctx: Any) -> Any:  # Any: the Context class moved between Typer versions
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            _silence_stdout()  # the reader went away (`| head`): nobody is left to tell
            raise typer.Exit(EXIT_ERROR) from None
        except ApiError as exc:
            output.error(f"{exc.message}{hint(exc)}")
        except OSError as exc:
            output.error(str(exc) or type(exc).__name__)
        except ValueError as exc:
            output.error(str(exc))
        raise typer.Exit(EXIT_ERROR)


app = typer.Typer(
    cls=ErrorReportingGroup,
    name="benchrunner",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="markdown",  # docstring paragraphs are re-flowed, not broken at 100 columns
    pretty_exceptions_show_locals=False,  # locals hold tokens
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"benchrunner {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """Self-hosted continuous benchmarking: server, runner and client in one command.

    Start with `benchrunner up`.
    """


app.command("up")(up)
app.command("run")(run)
app.add_typer(job_app, name="job")
app.add_typer(report_app, name="report")
app.add_typer(threshold_app, name="threshold")
app.add_typer(alert_app, name="alert")
app.add_typer(baseline_app, name="baseline")
app.add_typer(webhook_app, name="webhook")
app.add_typer(bisect_app, name="bisect")
app.add_typer(calibrate_app, name="calibrate")
app.add_typer(benchmark_app, name="benchmark")
app.add_typer(branch_app, name="branch")
app.add_typer(testbed_app, name="testbed")
app.add_typer(measure_app, name="measure")
app.command("perf")(perf)
app.add_typer(image_app, name="image")
app.add_typer(template_app, name="template")
app.add_typer(org_app, name="org")
app.add_typer(project_app, name="project")
app.add_typer(spec_app, name="spec")
app.add_typer(runner_app, name="runner")
app.add_typer(user_app, name="user")
app.add_typer(admin_app, name="admin")
app.command("server")(server)


def main() -> None:
    app()
