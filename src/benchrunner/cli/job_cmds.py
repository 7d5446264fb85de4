"""``benchrunner job list|show|cancel|rerun|logs|output``: jobs of a project."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Literal, TypeVar

import typer

from benchrunner.api.jobs import Job
from benchrunner.api.reports import RunAnswer
from benchrunner.cli import output
from benchrunner.cli.config import project_client
from benchrunner.cli.log_cmds import print_log
from benchrunner.cli.options import LIST_PER_PAGE, Host, Json, Page, PerPage, Project, Token
from benchrunner.cli.views import job_summary, print_job, print_logs
from benchrunner.client import BenchrunnerClient

job_app = typer.Typer(
    help="Jobs of a project: list, inspect, cancel, rerun, read output.", no_args_is_help=True
)

STATUSES = "pending, claimed, running, completed, processed, failed, canceled"
JobRef = Annotated[str, typer.Argument(metavar="JOB", help="Job UUID.")]


JOB_COLUMNS = ("job", "status", "run", "spec", "created (UTC)")


def _job_row(job: Job) -> tuple[object, ...]:
    return (
        job.uuid,
        job.status,
        job_summary(job),
        None if job.spec is None else job.spec.slug,
        output.when(job.created),
    )


Found = TypeVar("Found")


def _job_action(
    host: str | None,
    token: str | None,
    project: str | None,
    as_json: bool,
    call: Callable[[BenchrunnerClient, str], Found],
    say: Callable[[Found], None],
) -> None:
    """One request about a job: its answer as JSON with ``--json``, else as ``say`` puts it."""
    with project_client(host, token, project) as (client, project_ref):
        found = call(client, project_ref)
    if as_json:
        output.print_json(found)
    else:
        say(found)


@job_app.command("list")
def job_list(
    project: Project = None,
    status: Annotated[
        str | None,
        typer.Option(help=f"Only jobs in these statuses, separated by commas: {STATUSES}."),
    ] = None,
    spec: Annotated[
        str | None, typer.Option(help="Only jobs for this spec (slug or UUID).")
    ] = None,
    runner: Annotated[
        str | None, typer.Option(help="Only jobs this runner claimed (slug or UUID).")
    ] = None,
    created_after: Annotated[
        str | None,
        typer.Option(help="Only jobs created at or after this time (ISO 8601, UTC if no zone)."),
    ] = None,
    created_before: Annotated[
        str | None,
        typer.Option(help="Only jobs created before this time (ISO 8601, UTC if no zone)."),
    ] = None,
    sort: Annotated[
        Literal["created", "modified"], typer.Option(help="Order by creation or last change.")
    ] = "created",
    direction: Annotated[
        Literal["asc", "desc"], typer.Option(help="Oldest (asc) or newest (desc) first.")
    ] = "desc",
    page: Page = 1,
    per_page: PerPage = LIST_PER_PAGE,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """Jobs of a project, newest first, filtered and paged by the server."""
    with project_client(host, token, project) as (client, project_ref):
        found = client.list_jobs(
            project_ref,
            status=status,
            spec=spec,
            runner=runner,
            created_after=created_after,
            created_before=created_before,
            sort=sort,
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
    _job_action(host, token, project, as_json, lambda c, p: c.get_job(p, job), print_job)


@job_app.command("cancel")
def job_cancel(
    job: JobRef,
    project: Project = None,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """Cancel a pending, claimed or running job; its runner stops the benchmark."""

    def say(found: Job) -> None:
        output.out().print(f"job {job} is {found.status}", markup=False)

    _job_action(host, token, project, as_json, lambda c, p: c.cancel_job(p, job), say)


@job_app.command("rerun")
def job_rerun(
    job: JobRef,
    project: Project = None,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """Run a finished job again: a new report and job with the same spec, branch, testbed,
    adapter and settings. A job still in flight cannot be rerun."""

    def say(report: RunAnswer) -> None:
        said = f"job {job} rerun as job {report.job} (report {report.uuid})"
        output.out().print(said, markup=False)

    _job_action(host, token, project, as_json, lambda c, p: c.rerun_job(p, job), say)


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
        output.print_json(found.output if "output" in found.model_fields_set else None)
    else:
        print_logs(found)
