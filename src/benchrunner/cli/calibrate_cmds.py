"""``benchrunner calibrate``: run a job several times unchanged on one spec, and read the noise
of each benchmark and the threshold proposed for it (docs/how-to/thresholds-alerts.md);
``calibrate show|list|apply`` for calibrations started earlier."""

from __future__ import annotations

import time
from typing import Annotated

import typer

from benchrunner.api.calibrations import CalibratedBenchmark, Calibration, CalibrationCreate
from benchrunner.cli import output
from benchrunner.cli.config import project_client
from benchrunner.cli.options import Host, Json, Project, Token
from benchrunner.cli.run_body import side_args
from benchrunner.client import BenchrunnerClient, refused_as_bad_request

calibrate_app = typer.Typer(
    help="Calibrate thresholds: run a job N times unchanged, propose a threshold per benchmark.",
    invoke_without_command=True,
)

CalibrationRef = Annotated[str, typer.Argument(metavar="CALIBRATION", help="Calibration UUID.")]
COLUMNS = ("benchmark", "measure", "runs", "mean", "cv", "detectable change", "proposal")
POLL_SECONDS = 1.0


def _percent(value: object) -> str:
    return f"{float(value) * 100:.2f}%" if isinstance(value, int | float) else "-"


def _row(entry: CalibratedBenchmark) -> list[object]:
    proposal = entry.proposal
    proposed = (
        f"t_test {proposal.upper_boundary:g} both sides, last {proposal.max_sample_size}"
        if proposal is not None
        else str(entry.why or "-")
    )
    mean = entry.mean
    return [
        entry.benchmark,
        entry.measure,
        entry.runs,
        f"{mean:.6g} {entry.units}" if mean is not None else "-",
        _percent(entry.cv),
        _percent(entry.detectable_change),
        proposed,
    ]


def _print(found: Calibration) -> None:
    output.print_record(
        [
            ("calibration", found.uuid),
            ("state", found.state),
            ("spec", found.spec),
            ("runs", f"{found.processed} processed, {found.failed} failed of {found.runs}"),
            ("for", f"branch {found.target.branch}, testbed {found.target.testbed}"),
            ("false alarms", f"{_percent(found.false_alarm_rate)} of runs"),
            ("stale", found.stale or "no"),
            ("applied", output.when(found.applied) if found.applied else "no"),
        ]
    )
    benchmarks = found.benchmarks
    if benchmarks:
        output.print_table(
            COLUMNS, [_row(entry) for entry in benchmarks], title="Proposal per benchmark"
        )
        output.note(
            f"detectable change: the smallest change the proposed threshold catches in one run "
            f"{_percent(found.power)} of the time"
        )


def _follow(client: BenchrunnerClient, project: str, calibration: str) -> Calibration:
    """Wait for the calibration to end, saying how many runs are processed when that changes."""
    said = None
    while True:
        found = client.get_calibration(project, calibration)
        if found.state != "running":
            return found
        progress = (found.processed, found.failed)
        if progress != said:
            said = progress
            output.err().print(
                f"calibration {calibration}: {progress[0]} of {found.runs} runs "
                f"processed, {progress[1]} failed",
                soft_wrap=True,
                markup=False,
            )
        time.sleep(POLL_SECONDS)


@calibrate_app.callback()
def calibrate(
    ctx: typer.Context,
    spec: Annotated[str | None, typer.Option(help="The spec every run runs on.")] = None,
    template: Annotated[str | None, typer.Option(help="The job: a template ...")] = None,
    arg: Annotated[
        str | None, typer.Option(help="The template's arguments: name=value,name=value.")
    ] = None,
    image: Annotated[str | None, typer.Option(help="... or an image.")] = None,
    runs: Annotated[int, typer.Option(min=3, max=100, help="How many runs.")] = 10,
    iterations: Annotated[int, typer.Option("--iter", min=1, help="Iterations a run.")] = 1,
    adapter: Annotated[str, typer.Option(help="The harness's adapter.")] = "json",
    false_alarm_rate: Annotated[
        float, typer.Option(help="False alarms per run the thresholds allow (0.01: 1 in 100).")
    ] = 0.01,
    branch: Annotated[str, typer.Option(help="The branch the thresholds are for.")] = "main",
    testbed: Annotated[str, typer.Option(help="The testbed the thresholds are for.")] = "localhost",
    apply: Annotated[bool, typer.Option(help="Apply the proposal when done.")] = False,
    project: Project = None,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """Run the job RUNS times on SPEC, unchanged, wait, and print each benchmark's noise and
    the threshold proposed for it; with --apply, make those the thresholds of BRANCH."""
    if ctx.invoked_subcommand is not None:
        return
    if spec is None or (template is None) == (image is None):
        raise typer.BadParameter("give --spec and either --template or --image")
    with refused_as_bad_request():
        body = CalibrationCreate(
            spec=spec,
            runs=runs,
            iterations=iterations,
            adapter=adapter,
            false_alarm_rate=false_alarm_rate,
            branch=branch,
            testbed=testbed,
            template=template,
            args=side_args(arg, "--arg") if template is not None and arg else None,
            image=image if template is None else None,
        )
    with project_client(host, token, project, timeout=300) as (client, project_ref):
        created = client.create_calibration(project_ref, body)
        found = _follow(client, project_ref, created.uuid)
        if apply and found.state == "done":
            found = client.apply_calibration(project_ref, created.uuid)
    output.show(found, as_json, _print)
    if found.state != "done":
        raise typer.Exit(1)


@calibrate_app.command("show")
def calibrate_show(
    calibration: CalibrationRef,
    project: Project = None,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """One calibration: its state, and its proposal when done."""
    with project_client(host, token, project) as (client, project_ref):
        found = client.get_calibration(project_ref, calibration)
    output.show(found, as_json, _print)


@calibrate_app.command("list")
def calibrate_list(
    project: Project = None, host: Host = None, token: Token = None, as_json: Json = False
) -> None:
    """The project's calibrations, newest first."""
    with project_client(host, token, project) as (client, project_ref):
        found = client.list_calibrations(project_ref)
    output.show_page(
        found,
        as_json,
        ("calibration", "state", "spec", "branch", "runs", "stale", "created"),
        lambda c: [
            c.uuid,
            c.state,
            c.spec,
            c.target.branch,
            c.runs,
            "yes" if c.stale else "no",
            output.when(c.created),
        ],
        title="Calibrations",
    )


@calibrate_app.command("apply")
def calibrate_apply(
    calibration: CalibrationRef,
    project: Project = None,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """Make a done calibration's proposal the per-benchmark thresholds of its branch."""
    with project_client(host, token, project) as (client, project_ref):
        found = client.apply_calibration(project_ref, calibration)
    output.show(found, as_json, _print)
