"""A project's history: the body that ignores a benchmark, the one that resets a series'
baseline, and the branches, testbeds, benchmarks, measures and baseline resets as the server
answers them (docs/how-to/thresholds-alerts.md)."""

from __future__ import annotations

from pydantic import ConfigDict, Field

from benchrunner.api.base import Answer, ApiBody
from benchrunner.api.thresholds import Named


class BenchmarkUpdate(ApiBody):
    model_config = ConfigDict(extra="forbid")
    ignored: bool | None = None


class BaselineReset(ApiBody):
    model_config = ConfigDict(extra="forbid")
    branch: str = Field(min_length=1, max_length=256)
    testbed: str = Field(min_length=1, max_length=64)
    measure: str | None = Field(default=None, min_length=1, max_length=64)
    report: str = Field(min_length=1, max_length=64)


class HistoryDimension(Answer):
    """A branch, testbed, benchmark or measure as its own list and read answer it."""

    uuid: str
    project: str
    name: str
    slug: str
    created: str | None = None


class StartPoint(Answer):
    """The versions of the branch it started from that a new branch's history begins with."""

    version: int | None = None
    max_versions: int | None = None


class Branch(HistoryDimension):
    start_point: StartPoint | None = None
    head_reset: str | None = None
    """When the branch's head last started again (its history cleared); None: never."""


class Testbed(HistoryDimension):
    pass


class Benchmark(HistoryDimension):
    ignored: bool = False
    """Its metrics are stored but never judged."""


class Measure(HistoryDimension):
    units: str


class NewBaseline(Answer):
    """A series' new baseline from ``report`` on; ``measure`` None: every measure's.
    ``dismissed``: the active alerts it dismissed."""

    uuid: str
    project: str
    branch: Named
    testbed: Named
    measure: Named | None = None
    report: str
    dismissed: int
    created: str
