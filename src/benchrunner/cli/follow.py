"""Following a submitted job to its end: a live status line, then its metrics or its failure."""

from __future__ import annotations

from benchrunner.cli import output
from benchrunner.cli.views import event_line, failure_reason, print_report
from benchrunner.client import BenchrunnerClient, JsonObject

EXIT_INTERRUPTED = 130


def follow_job(
    client: BenchrunnerClient, project: str, job: str, timeout: float, *, as_json: bool
) -> int:
    """Wait for ``job`` and print how it ended; the exit code: 0 only for a processed job whose
    report has no error, 1 otherwise, 130 when the user stopped following with Ctrl-C.

    Raises ``JobWaitTimeout`` after ``timeout`` seconds and ``ApiError`` if a read fails.
    """
    console = output.err()
    printed = 0

    def on_status(current: JsonObject) -> None:
        nonlocal printed
        events = current.get("events") or []
        for event in events[printed:]:
            console.print(event_line(event), soft_wrap=True)
        printed = len(events)
        status.update(f"job {job}: {current.get('status')}")

    try:
        with console.status(f"job {job}: submitted") as status:
            final = client.wait_for_job(project, job, timeout, on_status)
    except KeyboardInterrupt:
        output.note(
            f"stopped following; the job goes on: benchrunner job show {job} --project {project}"
        )
        return EXIT_INTERRUPTED

    report = client.get_report(project, final["report"])
    ok = final.get("status") == "processed" and not report.get("error")
    if as_json:
        output.print_json({"job": final, "report": report})
    else:
        output.out().print(f"job {job}: {final.get('status')}", markup=False, soft_wrap=True)
        if final.get("status") == "processed":
            print_report(report)
    if not ok:
        reason = report.get("error") or failure_reason(final)
        output.error(f"job {job} {final.get('status')}: {reason}")
        output.note(f"its output: benchrunner job logs {job} --project {project}")
    return 0 if ok else 1
