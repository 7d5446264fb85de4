"""How jobs and reports look in a terminal."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from benchrunner.api.jobs import Job, JobEvent, JobOutput
from benchrunner.api.reports import Report
from benchrunner.cli import output
from benchrunner.cli.duet_view import print_duet
from benchrunner.cli.noise_format import job_noise_line, report_noise_lines
from benchrunner.cli.report_format import (
    ALERT,
    TABLE_COLUMNS,
    MetricRow,
    alert_lines,
    bisect_lines,
    count_text,
    report_rows,
    row_cells,
    several_iterations,
)


def print_report(report: Report) -> None:
    """The report's metrics as a table (value, baseline, change, limits, alert), then its
    error and its alerts, one line each."""
    branch, testbed = report.branch.name, report.testbed.name
    console = output.out()
    console.print(
        Text(f"report {report.uuid}: branch {branch}, testbed {testbed}", style="bold"),
        soft_wrap=True,
    )
    rows = report_rows(report)
    duet = report.duet
    if rows:
        console.print(_metrics_table(rows))
    elif duet is None:
        output.note("no metrics")
    if duet is not None:
        print_duet(console, duet)
    if report.error:
        console.print(Text(f"error: {report.error}", style="red"), soft_wrap=True)
    noise = report.noise
    if noise is not None:
        style = "yellow" if noise.verdict == "noisy" else None
        for line in report_noise_lines(noise):
            console.print(Text(line, style=style or ""), soft_wrap=True)
    lines = alert_lines(report)
    if lines:
        console.print(Text(f"{count_text(len(lines))}:", style="bold red"))
        for line in lines:
            console.print(Text(f"{ALERT} {line}", style="red"), soft_wrap=True)
    for line in bisect_lines(report):
        console.print(Text(line), soft_wrap=True)


def _metrics_table(rows: list[MetricRow]) -> Table:
    table = Table(header_style="bold")
    iterations = several_iterations(rows)
    if iterations:
        table.add_column("iteration", justify="right")
    for column in TABLE_COLUMNS:
        numeric = column not in ("benchmark", "measure")
        table.add_column(column, justify="right" if numeric else "left", overflow="fold")
    table.add_column("alert")
    for row in rows:
        cells = list(row_cells(row))
        if iterations:
            cells.insert(0, str(row.iteration))
        style = "red" if row.alert is not None and row.alert.active else None
        table.add_row(*(Text(cell) for cell in cells), style=style)  # names are not markup
    return table


def job_summary(job: Job) -> str:
    config = job.config
    if config.template:
        args = " ".join(f"{k}={v}" for k, v in (config.args or {}).items())
        return f"{config.template} {args}".strip()
    return config.digest or "-"


def failure_reason(job: Job) -> str:
    """Why a job did not produce metrics: its output error, else its last event's message."""
    error = None if job.output is None else job.output.error
    if error:
        return error
    if job.events:
        return str(job.events[-1].message or job.events[-1].event_type)
    return f"job is {job.status}"


def event_line(event: JobEvent) -> Text:
    actor = f" ({event.actor})" if event.actor else ""
    line = Text(f"{output.when(event.created, precise=True)}  ")
    line.append(f"{event.event_type:<10}", style="bold")
    line.append(f" {event.message}{actor}")
    return line


def event_details(event: JobEvent) -> str | None:
    """An event's meta as ``key=value`` pairs (request metadata, the linked rerun job)."""
    meta = event.meta
    pairs = [f"{key}={value}" for key, value in sorted(meta.items()) if value is not None]
    return " ".join(pairs) or None


def signature_summary(job: Job) -> str | None:
    """``verified (SHA256:...)`` for a result its runner signed; None (not shown) otherwise."""
    signature = job.signature
    if not signature.signed:
        return None
    state = "verified" if signature.verified else "not verified"
    return f"{state} ({signature.key_fingerprint})"


def print_job(job: Job) -> None:
    output.print_record(
        [
            ("job", job.uuid),
            ("status", job.status),
            ("kind", job.kind),
            ("run", job_summary(job)),
            ("spec", None if job.spec is None else job.spec.slug),
            ("report", job.report),
            ("runner", job.runner),
            ("timeout", f"{job.timeout} s"),
            ("priority", job.priority),
            ("created", output.when(job.created)),
            ("claimed", output.when(job.claimed)),
            ("started", output.when(job.started)),
            ("completed", output.when(job.completed)),
            ("result signature", signature_summary(job)),
        ]
    )
    if job.events:
        rows = [
            (
                output.when(e.created, precise=True),
                e.event_type,
                e.actor,
                e.message,
                event_details(e),
            )
            for e in job.events
        ]
        output.print_table(
            ("time (UTC)", "event", "actor", "message", "details"), rows, title="Events"
        )
    job_output = job.output
    if job_output is not None:
        _print_iterations(job_output)
        if job_output.noise is not None:
            output.out().print(Text(job_noise_line(job_output.noise)), soft_wrap=True)
        if job_output.error:
            output.out().print(Text(f"error: {job_output.error}", style="red"))


def _heading(title: str) -> Text:
    return Text(f"==> {title} <==", style="bold")  # tail's style: short, greppable, no width


def print_logs(job: Job) -> None:
    """Each iteration's stdout and stderr (and collected files), under a heading naming each."""
    job_output = job.output
    if job_output is None:
        output.note(f"job {job.uuid} is {job.status}: no output yet")
        return
    _print_iterations(job_output)
    if job_output.error:
        output.out().print(Text(f"error: {job_output.error}", style="red"), soft_wrap=True)


def _print_iterations(job_output: JobOutput) -> None:
    console = output.out()
    for i, result in enumerate(job_output.results):
        exit_code = output.cell(result.exit_code)
        for stream in ("stdout", "stderr"):
            text = result.stdout if stream == "stdout" else result.stderr
            if stream == "stderr" and not text:
                continue  # an empty stderr is the usual case, not worth a heading
            title = f"iteration {i} {stream} (exit code {exit_code})"
            console.print(_heading(title))
            console.print(Text(str(text).rstrip("\n") if text else "(empty)"), soft_wrap=True)
        for path, text in sorted((result.output or {}).items()):
            console.print(_heading(f"iteration {i} file {path}"))
            console.print(Text(str(text).rstrip("\n")), soft_wrap=True)
