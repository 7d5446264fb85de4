"""The jobs table as the console shows it: the filters a viewer chose (kept in the URL), and
one page of the project's jobs read with the API's own filter and paging queries."""

from __future__ import annotations

from dataclasses import dataclass, replace
from urllib.parse import urlencode
from uuid import UUID

from sqlalchemy.engine import Connection

from benchrunner.core.states import JobStatus
from benchrunner.server.console.templating import utc_seconds
from benchrunner.server.console.viewer import Viewer, visible_project
from benchrunner.server.http.errors import ApiError
from benchrunner.server.http.job_queries import JobQuery, job_filter
from benchrunner.server.store import dimensions, job_reads
from benchrunner.server.store.accounts import ProjectRow
from benchrunner.server.store.job_reads import JobDetail
from benchrunner.server.store.tables import branch

PER_PAGE = 25
MAX_CHOICES = 200
"""Branch names offered to the filter's input (any other name can still be typed)."""
LIVE = frozenset({JobStatus.PENDING, JobStatus.CLAIMED, JobStatus.RUNNING, JobStatus.COMPLETED})
"""Statuses a job soon leaves: a page showing one refreshes it."""


@dataclass(frozen=True)
class JobFilters:
    """What the filter form asks for; an empty value does not narrow the list."""

    statuses: tuple[str, ...] = ()
    spec: str = ""
    runner: str = ""
    branch: str = ""
    page: int = 1

    def query(self, page: int | None = None) -> str:
        """The query string of this list (on another ``page``), for links and the fragment."""
        pairs = [("status", s) for s in self.statuses]
        pairs += [(k, v) for k, v in (("spec", self.spec), ("runner", self.runner)) if v]
        if self.branch:
            pairs.append(("branch", self.branch))
        number = self.page if page is None else page
        if number > 1:
            pairs.append(("page", str(number)))
        return urlencode(pairs)

    def api_query(self) -> JobQuery:
        return JobQuery(
            status=",".join(self.statuses) or None,
            spec=self.spec or None,
            runner=self.runner or None,
            branch=self.branch or None,
            created_after=None,
            created_before=None,
            sort="created",
            direction="desc",
        )


@dataclass(frozen=True)
class JobLine:
    """One row of the table."""

    uuid: UUID
    status: str
    kind: str
    what: str
    """The template's name or the image's short digest."""
    spec: str
    runner: str
    branch: str
    created: str
    finished: bool

    @property
    def short(self) -> str:
        return str(self.uuid)[:8]


def _what(detail: JobDetail) -> str:
    config = detail.job.config
    if config.template is not None:
        return config.template
    return (config.digest or "")[:19]


@dataclass(frozen=True)
class JobList:
    project: ProjectRow
    filters: JobFilters
    lines: list[JobLine]
    total: int
    specs: list[str]
    runners: list[str]
    branches: list[str]
    error: str | None = None

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // PER_PAGE))

    @property
    def live(self) -> bool:
        """Whether a row may still change (or a new job appear on the first page)."""
        return self.filters.page == 1 or any(not line.finished for line in self.lines)


def job_list(
    conn: Connection, viewer: Viewer, ref: str, wanted: JobFilters, *, choices: bool = True
) -> JobList:
    """A page of the jobs of project ``ref`` (404 if the viewer may not read it), with the
    specs and runners its jobs used and its branches, which the filter form offers, unless
    ``choices`` is false (the rows alone); a filter naming no spec, runner or branch is the
    list's error, with no rows."""
    project = visible_project(conn, viewer, ref)
    empty = JobList(project, wanted, [], 0, [], [], [])
    if choices:
        specs, used = job_reads.project_job_specs_and_runners(conn, project.id)
        branch_rows, _ = dimensions.dimension_list(
            conn, branch, project.id, name=None, ascending=True, limit=MAX_CHOICES, offset=0
        )
        empty = replace(
            empty, specs=specs, runners=used, branches=[row.name for row in branch_rows]
        )
    try:
        found, total = job_reads.job_page(
            conn,
            project.id,
            job_filter(conn, wanted.api_query(), project.id),
            sort="created",
            ascending=False,
            limit=PER_PAGE,
            offset=(wanted.page - 1) * PER_PAGE,
        )
    except ApiError as exc:
        return replace(empty, error=exc.message)
    places = job_reads.job_places(conn, [d.job.id for d in found])
    lines = [
        JobLine(
            uuid=d.job.uuid,
            status=d.job.status.wire,
            kind=d.job.kind,
            what=_what(d),
            spec=d.spec.slug,
            runner=places[d.job.id].runner or "",
            branch=places[d.job.id].branch,
            created=utc_seconds(d.job.created),
            finished=d.job.status not in LIVE,
        )
        for d in found
    ]
    return replace(empty, lines=lines, total=total)
