"""``benchrunner job logs JOB [--follow]``: a job's live log, as written, redacted."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator

from benchrunner.api.jobs import JobLogEnd, JobLogPage
from benchrunner.cli import output
from benchrunner.client import BenchrunnerClient

PAGE_BYTES = 131072


def log_pages(
    client: BenchrunnerClient, project: str, job: str, offset: int
) -> Iterator[JobLogPage]:
    """Pages of the log from ``offset`` up to what is stored now."""
    while True:
        page = client.job_logs(project, job, offset=offset, limit=PAGE_BYTES)
        yield page
        if page.is_complete or page.next_offset == offset:
            return
        offset = page.next_offset


def print_log(
    client: BenchrunnerClient, project: str, job: str, *, offset: int, follow: bool, as_json: bool
) -> None:
    """Write the log to stdout as it is (with ``as_json``, one JSON object a line: the pages, or
    the events of the follow stream); with ``follow``, until the job has finished."""
    source = client.follow_job_logs(project, job, offset=offset) if follow else None
    items = source if source is not None else log_pages(client, project, job, offset)
    for item in items:
        if as_json:
            sys.stdout.write(json.dumps(output.as_sent(item), ensure_ascii=False) + "\n")
        elif isinstance(item, JobLogEnd):
            sys.stdout.flush()
            output.note(f"job {job} is {item.status}")
        else:
            sys.stdout.write(item.content)
        sys.stdout.flush()
