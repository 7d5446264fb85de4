"""How jobs and reports look in a terminal."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rich.text import Text

from benchrunner.cli import output
from benchrunner.client import JsonObject


def number(value: object) -> str:
    """Metric values short but exact enough to compare: 20, 0.5, 1234.5, 0.000123."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return output.cell(value)
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    if abs(value) >= 1000:
        return f"{value:.1f}"
    return f"{value:.6g}"


def metric_rows(report: JsonObject) -> Iterator[tuple[str, ...]]:
    for iteration, benchmarks in enumerate(report.get("results") or []):
        for bench in benchmarks:
            for measure in bench["measures"]:
                metric = measure["metric"]
                yield (
                    str(iteration),
                    bench["benchmark"]["name"],
                    measure["measure"]["name"],
                    number(metric.get("value")),
                    number(metric.get("lower_value")),
                    number(metric.get("upper_value")),
                )


def print_report(report: JsonObject) -> None:
    branch = (report.get("branch") or {}).get("name")
    testbed = (report.get("testbed") or {}).get("name")
    rows = list(metric_rows(report))
    output.out().print(
        Text(f"report {report['uuid']}: branch {branch}, testbed {testbed}", style="bold"),
        soft_wrap=True,
    )
    if not rows:
        output.note("no metrics")
        return
    output.print_table(("iteration", "benchmark", "measure", "value", "lower", "upper"), rows)


def job_summary(job: JsonObject) -> str:
    config = job.get("config") or {}
    if config.get("template"):
        args = " ".join(f"{k}={v}" for k, v in (config.get("args") or {}).items())
        return f"{config['template']} {args}".strip()
    return str(config.get("digest") or "-")


def failure_reason(job: JsonObject) -> str:
    """Why a job did not produce metrics: its output error, else its last event's message."""
    error = (job.get("output") or {}).get("error")
    if error:
        return str(error)
    events = job.get("events") or []
    if events:
        return str(events[-1].get("message") or events[-1].get("event_type"))
    return f"job is {job.get('status')}"


def event_line(event: JsonObject) -> Text:
    actor = f" ({event['actor']})" if event.get("actor") else ""
    line = Text(f"{output.when(event.get('created'), precise=True)}  ")
    line.append(f"{event.get('event_type'):<10}", style="bold")
    line.append(f" {event.get('message')}{actor}")
    return line


def print_job(job: JsonObject) -> None:
    spec = job.get("spec") or {}
    output.print_record(
        [
            ("job", job.get("uuid")),
            ("status", job.get("status")),
            ("kind", job.get("kind")),
            ("run", job_summary(job)),
            ("spec", spec.get("slug")),
            ("report", job.get("report")),
            ("runner", job.get("runner")),
            ("timeout", f"{job.get('timeout')} s"),
            ("priority", job.get("priority")),
            ("created", output.when(job.get("created"))),
            ("claimed", output.when(job.get("claimed"))),
            ("started", output.when(job.get("started"))),
            ("completed", output.when(job.get("completed"))),
        ]
    )
    events = job.get("events") or []
    if events:
        rows = [
            (
                output.when(e.get("created"), precise=True),
                e.get("event_type"),
                e.get("actor"),
                e.get("message"),
            )
            for e in events
        ]
        output.print_table(("time (UTC)", "event", "actor", "message"), rows, title="Events")
    job_output = job.get("output")
    if job_output is not None:
        iterations = [
            (
                i,
                r.get("exit_code"),
                _size(r.get("stdout")),
                _size(r.get("stderr")),
                ", ".join(sorted(r.get("output") or {})) or None,
            )
            for i, r in enumerate(job_output.get("results") or [])
        ]
        output.print_table(
            ("iteration", "exit code", "stdout", "stderr", "files"), iterations, title="Output"
        )
        if job_output.get("error"):
            output.out().print(Text(f"error: {job_output['error']}", style="red"))


def _size(text: Any) -> str:
    if not text:
        return "-"
    return f"{len(str(text).encode())} bytes"


def _heading(title: str) -> Text:
    return Text(f"==> {title} <==", style="bold")  # tail's style: short, greppable, no width


def print_logs(job: JsonObject) -> None:
    """Each iteration's stdout and stderr (and collected files), under a heading naming each."""
    job_output = job.get("output")
    if job_output is None:
        output.note(f"job {job.get('uuid')} is {job.get('status')}: no output yet")
        return
    console = output.out()
    for i, result in enumerate(job_output.get("results") or []):
        exit_code = output.cell(result.get("exit_code"))
        for stream in ("stdout", "stderr"):
            text = result.get(stream)
            if stream == "stderr" and not text:
                continue  # an empty stderr is the usual case, not worth a heading
            title = f"iteration {i} {stream} (exit code {exit_code})"
            console.print(_heading(title))
            console.print(Text(str(text).rstrip("\n") if text else "(empty)"), soft_wrap=True)
        for path, text in sorted((result.get("output") or {}).items()):
            console.print(_heading(f"iteration {i} file {path}"))
            console.print(Text(str(text).rstrip("\n")), soft_wrap=True)
    if job_output.get("error"):
        console.print(Text(f"error: {job_output['error']}", style="red"), soft_wrap=True)
