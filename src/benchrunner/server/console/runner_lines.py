"""A runner as the console shows it: its state (from its row, the server's channels and its job
in flight), the names of its specs, that job, and when it was last heard from. Shared by the
runners list, one runner's page and the runners serving a spec."""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from sqlalchemy.engine import Connection

from benchrunner.server.store import activity, runners
from benchrunner.server.store.activity import JobSummary
from benchrunner.server.store.runners import RunnerRow


@dataclass(frozen=True)
class RunnerLine:
    runner: RunnerRow
    state: str
    specs: list[str]
    job: JobSummary | None
    last_heartbeat: dt.datetime | None


def runner_state(row: RunnerRow, connected: bool, job: JobSummary | None) -> str:
    """archived, paused, busy (a job in flight), idle (connected, waiting) or offline."""
    if row.archived is not None:
        return "archived"
    if row.paused:
        return "paused"
    if job is not None:
        return "busy"
    return "idle" if connected else "offline"


def runner_line(
    row: RunnerRow, connected: Collection[int], job: JobSummary | None, specs: list[str]
) -> RunnerLine:
    """The line of one runner; its last heartbeat is its own or its job's, whichever is newer
    (a runner busy with a job beats for the job)."""
    beats = [t for t in (row.last_heartbeat, job.last_heartbeat if job else None) if t]
    return RunnerLine(
        row, runner_state(row, row.id in connected, job), specs, job, max(beats) if beats else None
    )


def runner_lines(
    conn: Connection,
    rows: Sequence[RunnerRow],
    connected: Collection[int],
    *,
    with_specs: bool = True,
) -> list[RunnerLine]:
    """The lines of ``rows``, in their order: two queries for their jobs in flight and, with
    ``with_specs``, one for their specs' names."""
    ids = [row.id for row in rows]
    jobs = activity.runners_current_jobs(conn, ids)
    specs = runners.runners_spec_names(conn, ids) if with_specs else {}
    return [runner_line(row, connected, jobs.get(row.id), specs.get(row.id, [])) for row in rows]
