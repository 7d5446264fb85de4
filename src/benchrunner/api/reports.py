"""A report's ``PATCH`` body: what a bisection of its alerts needs (docs/how-to/bisect.md)."""

from __future__ import annotations

from pydantic import ConfigDict, Field

from benchrunner.api.base import ApiBody
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
