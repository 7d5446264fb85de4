"""One job as its console page shows it: what it runs, where, its event timeline with actors,
a page of its log, each iteration's output, its report's noise verdict, and whether the viewer
may cancel or rerun it.

Everything is read with the API's functions (``job_access``, ``job_events``, ``log_page``,
``shown_output``); the text a job produced is shown redacted as its log is.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Connection

from benchrunner.core.events import status_reached
from benchrunner.core.log_paging import OffsetError
from benchrunner.core.redaction import JobLogRedactor
from benchrunner.core.states import FINISHED
from benchrunner.server.access import job_access
from benchrunner.server.console.job_lines import LIVE
from benchrunner.server.console.templating import utc_seconds
from benchrunner.server.console.viewer import Viewer, may_change, visible_project
from benchrunner.server.context import ServerContext
from benchrunner.server.http.errors import bad_request
from benchrunner.server.logs.job_logs import log_page, redactor_for
from benchrunner.server.processing.noise import noise_view, stored_verdict
from benchrunner.server.processing.outputs import shown_output
from benchrunner.server.store import job_reads
from benchrunner.server.store.accounts import ProjectRow
from benchrunner.server.store.job_reads import JobDetail
from benchrunner.server.store.jobs import JobRow

LOG_PAGE_BYTES = 65536


@dataclass(frozen=True)
class EventLine:
    created: str
    event_type: str
    status: str | None
    actor: str
    message: str


@dataclass(frozen=True)
class LogView:
    """A page of the log: ``content`` from ``offset`` to ``next_offset``; ``more`` says more
    is stored already, ``complete`` that the job has finished and nothing follows."""

    offset: int
    next_offset: int
    content: str
    more: bool
    complete: bool


@dataclass(frozen=True)
class IterationView:
    number: int
    exit_code: int | None
    stdout: str
    stderr: str
    files: list[tuple[str, str]]


@dataclass(frozen=True)
class OutputView:
    iterations: list[IterationView]
    error: str | None


@dataclass(frozen=True)
class JobFacts:
    """What the page shows of the job itself, read in one transaction."""

    project: ProjectRow
    detail: JobDetail
    runner: str
    branch: str
    testbed: str
    events: list[EventLine]
    config: list[tuple[str, str]]
    can_write: bool
    noise: dict[str, Any] | None
    """The report's noise verdict (``server.processing.noise``), once the job's output is
    processed."""

    @property
    def noise_reasons(self) -> list[str]:
        found = stored_verdict(self.noise)
        return [] if found is None else found.reasons

    @property
    def job(self) -> JobRow:
        return self.detail.job

    @property
    def status(self) -> str:
        return self.job.status.wire

    @property
    def live(self) -> bool:
        """The status may still change: the page keeps refreshing it."""
        return self.job.status in LIVE

    @property
    def cancelable(self) -> bool:
        return self.job.status not in FINISHED

    @property
    def rerunnable(self) -> bool:
        return self.job.status in FINISHED

    @property
    def times(self) -> list[tuple[str, str]]:
        job = self.job
        moments = (
            ("Created", job.created),
            ("Claimed", job.claimed),
            ("Started", job.started),
            ("Completed", job.completed),
            ("Last heartbeat", job.last_heartbeat),
        )
        return [(label, utc_seconds(moment)) for label, moment in moments if moment is not None]


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _config(job: JobRow, redactor: JobLogRedactor) -> list[tuple[str, str]]:
    """The job's config as name and text, secret-looking environment values redacted."""
    shown = job.config.model_dump(mode="json", exclude_none=True)
    return [(name, redactor(_text(value))) for name, value in shown.items()]


def _event(row: Any) -> EventLine:
    reached = status_reached(row.event_type)
    return EventLine(
        created=utc_seconds(row.created),
        event_type=row.event_type,
        status=None if reached is None else reached.wire,
        actor=row.actor or "",
        message=row.message or "",
    )


def job_facts(conn: Connection, viewer: Viewer, project: str, ref: str) -> JobFacts:
    """The job ``ref`` of ``project`` with what its page shows; 404 as the API answers."""
    found = visible_project(conn, viewer, project)
    detail = job_access(conn, viewer.user, project, ref, write=False, found_project=found)
    job = detail.job
    place = job_reads.job_places(conn, [job.id])[job.id]
    return JobFacts(
        project=found,
        detail=detail,
        runner=place.runner or "",
        branch=place.branch,
        testbed=place.testbed,
        events=[_event(row) for row in job_reads.job_events(conn, job.id)],
        config=_config(job, redactor_for(job)),
        can_write=may_change(conn, viewer, found),
        noise=noise_view(place.noise),
    )


def job_log(ctx: ServerContext, conn: Connection, job: JobRow, offset: int) -> LogView:
    """The page of ``job``'s log from ``offset`` (a ``next_offset`` handed out before; else a
    400)."""
    try:
        page = log_page(conn, ctx.log_index, job, offset, LOG_PAGE_BYTES)
    except OffsetError as exc:
        raise bad_request(f"log_offset: {exc}") from None
    return LogView(
        offset=offset,
        next_offset=page.slice.next_offset,
        content=page.slice.content.decode(),
        more=not page.slice.at_end,
        complete=page.is_complete,
    )


async def job_output_view(ctx: ServerContext, job: JobRow) -> OutputView | None:
    """Each iteration's exit code, output streams and collected files, redacted; None until
    the job has finished with an output."""
    if job.status not in FINISHED:
        return None
    output = await shown_output(ctx, job)
    if output is None:
        return None
    redactor = redactor_for(job)
    iterations = [
        IterationView(
            number=number,
            exit_code=result.exit_code,
            stdout=redactor(result.stdout or ""),
            stderr=redactor(result.stderr or ""),
            files=[(path, redactor(text)) for path, text in (result.output or {}).items()],
        )
        for number, result in enumerate(output.results, start=1)
    ]
    error = output.error
    return OutputView(iterations, None if error is None else redactor(error))
