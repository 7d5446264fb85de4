"""``benchrunner job list|show|cancel|logs``: jobs of a project."""

from __future__ import annotations

from typing import Annotated, Literal

import typer

from benchrunner.cli import output
from benchrunner.cli.config import require_project, resolve
from benchrunner.cli.options import LIST_PER_PAGE, Host, Json, Page, PerPage, Project, Token
from benchrunner.cli.views import job_summary, print_job, print_logs

job_app = typer.Typer(
    help="Jobs of a project: list, inspect, cancel, read output.", no_args_is_help=True
)

Status = Literal["pending", "claimed", "running", "completed", "processed", "failed", "canceled"]
JobRef = Annotated[str, typer.Argument(metavar="JOB", help="Job UUID.")]


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
    settings = resolve(host, token, project)
    with settings.client() as client:
        found = client.list_jobs(
            require_project(settings),
            status=status,
            page=page,
            per_page=per_page,
            direction=direction,
        )
    if as_json:
        output.print_json(found)
        return
    rows = [
        (
            j["uuid"],
            j["status"],
            job_summary(j),
            (j.get("spec") or {}).get("slug"),
            output.when(j["created"]),
        )
        for j in found
    ]
    output.print_table(
        ("job", "status", "run", "spec", "created (UTC)"), rows, title="Jobs", total=found.total
    )


@job_app.command("show")
def job_show(
    job: JobRef,
    project: Project = None,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """A job's status, event timeline and output summary."""
    settings = resolve(host, token, project)
    with settings.client() as client:
        found = client.get_job(require_project(settings), job)
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
    settings = resolve(host, token, project)
    with settings.client() as client:
        found = client.cancel_job(require_project(settings), job)
    if as_json:
        output.print_json(found)
    else:
        output.out().print(f"job {job} is {found['status']}", markup=False)


@job_app.command("logs")
def job_logs(
    job: JobRef,
    project: Project = None,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """Each iteration's stdout and stderr of a finished job.

    The output is stored when the job finishes; live logs of a running job come later.
    """
    settings = resolve(host, token, project)
    with settings.client() as client:
        found = client.get_job(require_project(settings), job)
    if as_json:
        output.print_json(found.get("output"))
    else:
        print_logs(found)
