"""A report's ``PATCH`` body: what a bisection of its alerts needs (docs/how-to/bisect.md); a
report as the server answers it, and ``POST /v0/run``'s answer: the report of the run
(docs/reference/run.md)."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field

from benchrunner.api.alerts import Alert, BranchDimension, ConfirmationRun, Dimension
from benchrunner.api.base import Answer, ApiBody
from benchrunner.api.run import MAX_BISECT_RANGE, BisectCommit, BisectImage


class ReportUpdate(ApiBody):
    """``PATCH .../reports/{report}``: a field left out is left as it is."""

    model_config = ConfigDict(extra="forbid")
    bisect_range: list[BisectCommit] | None = Field(
        default=None,
        max_length=MAX_BISECT_RANGE,
        description="the commits after the previous report's hash up to this one's, oldest "
        "first: `git rev-list --reverse --first-parent PREV..HASH`",
    )
    bisect_image: BisectImage | None = Field(
        default=None, description="a tag holding {commit}, e.g. sortlib:{commit}"
    )


class ReportSettings(Answer):
    adapter: str | None = None
    average: str | None = None
    fold: str | None = None


class ReportProject(Answer):
    """The project as a report names it, in Bencher's shape (docs/reference/run.md)."""

    uuid: str
    name: str
    slug: str
    organization: str
    visibility: str
    bmf_version: int | None = None
    url: str | None = None
    claimed: str | None = None
    created: str | None = None
    modified: str | None = None


class Report(Answer):
    """A report in Bencher's shape (``JsonReport``): ``results`` per iteration, each a list of
    benchmarks with their measures; the alerts its evaluation raised. ``job``: the runner job
    that runs it, if one does; ``duet`` a duet's verdict; ``confirms`` the report a
    confirmation run re-measures."""

    uuid: str
    project: ReportProject
    branch: BranchDimension
    testbed: Dimension
    adapter: str | None = None
    settings: ReportSettings | None = None
    start_time: str | None = None
    end_time: str | None = None
    results: list[list[dict[str, Any]]] = Field(default_factory=list)
    error: str | None = None
    noise: dict[str, Any] | None = None
    alerts: list[Alert] = Field(default_factory=list)
    created: str | None = None
    confirms: str | None = None
    confirmation_runs: list[ConfirmationRun] | None = None
    job: str | None = None
    duet: dict[str, Any] | None = None

    @property
    def held_back(self) -> int:
        """Its alerts held back while confirmation runs re-measure (status ``pending``)."""
        return sum(1 for alert in self.alerts if alert.status == "pending")


class RunAnswer(Report):
    """``POST /v0/run``'s answer: the report, and whether an idempotency key repeated an
    earlier submission (whose report it is)."""

    deduplicated: bool = False
