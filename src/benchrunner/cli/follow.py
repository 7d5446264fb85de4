"""Following a submitted job to its end: a live status line, then its metrics or its failure."""

from __future__ import annotations

import time
from collections.abc import Iterable

from benchrunner.api.jobs import Job, JobEvent
from benchrunner.api.reports import Report
from benchrunner.cli import output
from benchrunner.cli.duet_view import duet_alerts
from benchrunner.cli.report_format import active_alerts, count_text
from benchrunner.cli.views import event_line, failure_reason, print_report
from benchrunner.client import BenchrunnerClient
from benchrunner.core.events import judgment_failed

EXIT_FAILED = 1
"""The job failed, its report has an error, or (with ``--err``) it raised an alert. Bencher's
CLI also exits 1 for ``--err`` ("Alerts detected"), so CI scripts written for it still work."""
EXIT_INTERRUPTED = 130


JUDGMENT_WAIT_SECONDS = 60.0
"""How long ``run`` waits for a direct run's judgment that its answer says is pending (the
server's was cut short, and its recovery did not end while the request waited)."""


def report_failure(report: Report, *, err: bool) -> str | None:
    """Why a finished run should fail its CI step: the report's error (an adapter that could
    not read the output), or with ``err`` its active alerts (a duet's included) and those
    still held back for confirmation runs, which may be regressions, or its judgment not
    finished (its alerts unknown); None when it passes."""
    if report.error:
        return f"report {report.uuid} has an error: {report.error}"
    if err and report.judgment == "pending":
        return (
            f"the judgment of report {report.uuid} has not finished: its alerts are unknown (--err)"
        )
    alerts = len(active_alerts(report)) + duet_alerts(report) + report.held_back
    if err and alerts:
        return f"{count_text(alerts)} detected in report {report.uuid} (--err)"
    return None


def follow_job(
    client: BenchrunnerClient,
    project: str,
    job: str,
    timeout: float,
    *,
    as_json: bool,
    err: bool = False,
) -> int:
    """Wait for ``job`` and print how it ended; the exit code: 0 only for a processed job whose
    report has no error (and, with ``err``, no alert), 1 otherwise, 130 when the user stopped
    following with Ctrl-C.

    Raises ``JobWaitTimeout`` after ``timeout`` seconds and ``ApiError`` if a read fails.
    """
    console = output.err()
    deadline = time.monotonic() + timeout
    printed = 0

    def on_status(current: Job) -> None:
        nonlocal printed
        events = current.events or []
        for event in events[printed:]:
            console.print(event_line(event), soft_wrap=True)
        printed = len(events)
        status.update(f"job {job}: {current.status}")

    try:
        with console.status(f"job {job}: submitted") as status:
            final = client.wait_for_job(project, job, timeout, on_status)
    except KeyboardInterrupt:
        output.note(
            f"stopped following; the job goes on: benchrunner job show {job} --project {project}"
        )
        return EXIT_INTERRUPTED

    processed = final.status == "processed"
    with console.status(f"job {job}: {final.status}") as status:

        def on_wait(held: int) -> None:
            status.update(f"job {job}: {count_text(held)} waiting for confirmation runs")

        # An alert held back for confirmation runs is decided after its job is processed.
        report = client.wait_for_confirmations(
            project, final.report, max(0.0, deadline - time.monotonic()), on_wait
        )
    if as_json:
        output.print_json({"job": final, "report": report})
    else:
        output.out().print(f"job {job}: {final.status}", markup=False, soft_wrap=True)
        if processed:
            print_report(report)
    if not processed:
        reason = report.error or failure_reason(final)
        output.error(f"job {job} {final.status}: {reason}")
        output.note(f"its output: benchrunner job output {job} --project {project}")
        return EXIT_FAILED
    failure = report_failure(report, err=err)
    if failure is not None:
        output.error(failure)
        if report.error:
            output.note(f"its output: benchrunner job output {job} --project {project}")
        return EXIT_FAILED
    unjudged = judgment_failure(final.events or [])
    if unjudged is not None:
        what = f"the judgment of report {report.uuid} failed on the server ({unjudged})"
        if err:
            output.error(f"{what}: its alerts are unknown (--err)")
            return EXIT_FAILED
        output.warning(f"{what}: its alerts are unknown")
    return 0


def judgment_failure(events: Iterable[JobEvent]) -> str | None:
    """The message of a job's ``processed`` event (of its ``events``) when it says that its
    report's thresholds could not be judged (``core.events.judgment_failed``); None
    otherwise."""
    for event in events:
        if judgment_failed(event.event_type, event.meta):
            return event.message or "no reason given"
    return None
