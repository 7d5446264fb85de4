"""``benchrunner report show|comment``: a report as a table, or as a pull-request comment."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from benchrunner.api.reports import Report
from benchrunner.cli import output
from benchrunner.cli.config import project_client
from benchrunner.cli.options import Host, Json, Project, Token
from benchrunner.cli.report_format import active_alerts, comment_markdown
from benchrunner.cli.samples_format import print_samples
from benchrunner.cli.views import print_report

report_app = typer.Typer(
    help="Reports of a project: show one, or write it as a pull-request comment.",
    no_args_is_help=True,
)

ReportRef = Annotated[str, typer.Argument(metavar="REPORT", help="Report UUID.")]
STEP_SUMMARY = "GITHUB_STEP_SUMMARY"


@report_app.command("show")
def report_show(
    report: ReportRef,
    project: Project = None,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
    samples: Annotated[
        bool,
        typer.Option(
            "--samples",
            help="Also each metric's raw samples: count, min, median, max and the first values.",
        ),
    ] = False,
) -> None:
    """A report's metrics with their baselines, changes, limits and alerts; a duet's ratios
    with their intervals and alerts, apart."""
    with project_client(host, token, project) as (client, project_ref):
        found = client.get_report(project_ref, report, samples=samples)

    def render(shown: Report) -> None:
        print_report(shown)
        if samples:
            print_samples(shown)

    output.show(found, as_json, render)


def append_step_summary(text: str, path: str) -> None:
    """Append ``text`` to GitHub Actions' job summary file (``$GITHUB_STEP_SUMMARY``)."""
    with Path(path).open("a", encoding="utf-8") as summary:
        summary.write(text if text.endswith("\n") else text + "\n")


@report_app.command("comment")
def report_comment(
    report: ReportRef,
    only_alerts: Annotated[
        bool,
        typer.Option(
            "--only-alerts",
            "--ci-only-on-alert",
            help="Print nothing (and exit 0) unless the report has an active alert "
            "(--ci-only-on-alert: Bencher's name).",
        ),
    ] = False,
    project: Project = None,
    host: Host = None,
    token: Token = None,
) -> None:
    """The report as a Markdown pull-request comment: project, branch and testbed, a table of
    each metric (value, change against the baseline, limits, 🚨 on an alert) and the number of
    alerts. With `$GITHUB_STEP_SUMMARY` set, the comment is also appended to that file.
    """
    with project_client(host, token, project) as (client, project_ref):
        found = client.get_report(project_ref, report)
    if only_alerts and not active_alerts(found):
        return
    text = comment_markdown(found)
    sys.stdout.write(text)
    summary = os.environ.get(STEP_SUMMARY)
    if summary:
        append_step_summary(text, summary)
