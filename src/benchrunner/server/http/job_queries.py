"""The query strings the API and the console share about jobs: a job list's (statuses, spec,
runner, branch and creation window to filter by, and the order; each bad value a 400 that names
it) and the offset into a job's log."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Annotated, Literal

from fastapi import Depends, Query
from sqlalchemy.engine import Connection

from benchrunner.core.states import JobStatus
from benchrunner.server.http.errors import bad_request
from benchrunner.server.store import branches, job_reads, runners
from benchrunner.server.store.job_reads import JobSort

Offset = Annotated[
    int, Query(ge=0, le=2**62, description="byte offset in the redacted log (a next_offset)")
]


def _statuses(wanted: str | None) -> frozenset[JobStatus]:
    if wanted is None:
        return frozenset()
    try:
        return frozenset(JobStatus.from_wire(name.strip()) for name in wanted.split(","))
    except ValueError as exc:
        raise bad_request(f"status: {exc}; use one or more of {_STATUS_NAMES}") from None


_STATUS_NAMES = ", ".join(s.wire for s in JobStatus)


def _utc(moment: dt.datetime | None) -> dt.datetime | None:
    """A time without a zone is read as UTC."""
    if moment is None or moment.tzinfo is not None:
        return moment
    return moment.replace(tzinfo=dt.UTC)


def job_filter(conn: Connection, query: JobQuery, project_id: int) -> job_reads.JobFilter:
    """The filter ``query`` asks for, its spec and runner found by slug or UUID and its branch
    among the project's by UUID, slug or name (400 when there is no such spec, runner or
    branch)."""
    spec_id = runner_id = branch_id = None
    if query.spec is not None:
        spec_row = runners.spec_get(conn, query.spec)
        if spec_row is None:
            raise bad_request(f"spec: no spec {query.spec!r}")
        spec_id = spec_row.id
    if query.runner is not None:
        runner_row = runners.runner_get(conn, query.runner)
        if runner_row is None:
            raise bad_request(f"runner: no runner {query.runner!r}")
        runner_id = runner_row.id
    if query.branch is not None:
        branch_row = branches.branch_find(conn, project_id, query.branch)
        if branch_row is None:
            raise bad_request(f"branch: no branch {query.branch!r} in this project")
        branch_id = branch_row.id
    return job_reads.JobFilter(
        statuses=_statuses(query.status),
        spec_id=spec_id,
        runner_id=runner_id,
        branch_id=branch_id,
        created_after=query.created_after,
        created_before=query.created_before,
    )


@dataclass(frozen=True)
class JobQuery:
    """The filters and order of a job list, as given in the query string."""

    status: str | None
    spec: str | None
    runner: str | None
    branch: str | None
    created_after: dt.datetime | None
    created_before: dt.datetime | None
    sort: JobSort
    direction: Literal["asc", "desc"]


async def job_query(
    status: Annotated[
        str | None, Query(description="one status, or several separated by commas")
    ] = None,
    spec: Annotated[str | None, Query(description="spec UUID or slug")] = None,
    runner: Annotated[str | None, Query(description="runner UUID or slug")] = None,
    branch: Annotated[str | None, Query(description="branch UUID, slug or name")] = None,
    created_after: Annotated[
        dt.datetime | None, Query(description="created at or after (ISO 8601; UTC if no zone)")
    ] = None,
    created_before: Annotated[
        dt.datetime | None, Query(description="created before (ISO 8601; UTC if no zone)")
    ] = None,
    sort: JobSort = "created",
    direction: Literal["asc", "desc"] = "desc",
) -> JobQuery:
    after, before = _utc(created_after), _utc(created_before)
    if after is not None and before is not None and after >= before:
        raise bad_request("created_after must be earlier than created_before")
    return JobQuery(status, spec, runner, branch, after, before, sort, direction)


JobListQuery = Annotated[JobQuery, Depends(job_query)]
