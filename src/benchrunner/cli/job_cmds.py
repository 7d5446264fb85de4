"""``benchrunner job list|show|cancel|logs|output``: jobs of a project."""

from __future__ import annotations

from typing import Annotated, Literal

import typer

from benchrunner.cli import output
from benchrunner.cli.config import project_client
from benchrunner.cli.log_cmds import print_log
from benchrunner.cli.options import LIST_PER_PAGE, Host, Json, Page, PerPage, Project, Token
from benchrunner.cli.views import job_summary, print_job, print_logs
from benchrunner.client import JsonObject

job_app = typer.Typer(
    help="Jobs of a project: list, inspect, cancel, read output.", no_args_is_help=True
)

Status = Literal["pending", "claimed", "running", "completed", "processed", "failed", "canceled"]
JobRef = Annotated[str, typer.Argument(metavar="JOB", help="Job UUID.")]


JOB_COLUMNS = ("job", "status", "run", "spec", "created (UTC)")


def _job_row(job: JsonObject) -> tuple[object, ...]:
    return (
        job["uuid"],
        job["status"],
        job_summary(job),
        (job.get("spec") or {}).get("slug"),
        output.when(job["created"]),
    )


@job_app.command("list")
def job_list(
    project: Project = None,
    status: Annotated[Status | None, typer.Option(help="Only jobs in this status.")] = None,
    direction: Annotated[
        Literal["asc", "desc"], typer.Option(help="Oldest (asc) or newest (desc) first.")
    ] = "desc",
    page: Page = 1,
    per_page: PerPage = LIST_PER_PAGE,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """Jobs of a project, newest first."""
    with project_client(host, token, project) as (client, project_ref):
        found = client.list_jobs(
            project_ref,
            status=status,
            page=page,
            per_page=per_page,
            direction=direction,
        )
    output.show_page(found, as_json, JOB_COLUMNS, _job_row, title="Jobs")


@job_app.command("show")
def job_show(
    job: JobRef,
    project: Project = None,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """A job's status, event timeline and output summary."""
    with project_client(host, token, project) as (client, project_ref):
        found = client.get_job(project_ref, job)
    if as_json:
        output.print_json(found)
    else:
        print_job(found)


@job_app.command("cancel")
def job_cancel(
    job: JobRef,
    project: Project = None,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """Cancel a pending, claimed or running job; its runner stops the benchmark."""
    with project_client(host, token, project) as (client, project_ref):
        found = client.cancel_job(project_ref, job)
    if as_json:
        output.print_json(found)
    else:
        output.out().print(f"job {job} is {found['status']}", markup=False)


@job_app.command("logs")
def job_logs(
    job: JobRef,
    project: Project = None,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Keep printing until the job has finished.")
    ] = False,
    offset: Annotated[
        int, typer.Option(min=0, help="Start at this byte of the log (a next_offset).")
    ] = 0,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """The job's log: stdout and stderr as the runner sent them while it ran, secrets redacted.

    Without --follow, what the server has now; with it, everything until the job ends.
    """
    with project_client(host, token, project) as (client, project_ref):
        print_log(client, project_ref, job, offset=offset, follow=follow, as_json=as_json)


@job_app.command("output")
def job_output(
    job: JobRef,
    project: Project = None,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """Each iteration's stdout and stderr of a finished job, as stored with its result."""
    with project_client(host, token, project) as (client, project_ref):
        found = client.get_job(project_ref, job)
    if as_json:
        output.print_json(found.get("output"))
    else:
        print_logs(found)
