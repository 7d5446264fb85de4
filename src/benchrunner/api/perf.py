"""``GET /v0/projects/{project}/perf``'s answer: each chosen series (branch x testbed x
benchmark x measure) with its points over the time range, in Bencher's ``JsonPerf`` shape
(docs/reference/api.md)."""

from __future__ import annotations

from pydantic import Field

from benchrunner.api.base import Answer
from benchrunner.api.organizations import Project
from benchrunner.api.thresholds import Named, NamedMeasure, ThresholdModel


class PerfMetric(Answer):
    uuid: str
    value: float
    lower_value: float | None = None
    upper_value: float | None = None


class PerfVersion(Answer):
    """The branch version the point's report was on, and its commit."""

    number: int
    hash: str | None = None


class PerfThreshold(Answer):
    """The threshold that judged the point, with the model it judged by."""

    uuid: str
    model: ThresholdModel


class PerfBoundary(Answer):
    """The limits the point was judged against; ``verdict`` (same, different, unknown) only
    when the ``samples`` test drew them."""

    baseline: float | None = None
    lower_limit: float | None = None
    upper_limit: float | None = None
    verdict: str | None = None


class PerfAlert(Answer):
    uuid: str
    limit: str | None = None
    status: str
    modified: str | None = None


class PerfSamples(Answer):
    """The point's raw samples (``?samples=true``): ``values`` kept, ``count``, ``min`` and
    ``max`` of all of them, ``cut`` when some were left out of ``values``."""

    values: list[float] = Field(default_factory=list)
    count: int
    min: float | None = None
    max: float | None = None
    cut: bool = False


class PerfPoint(Answer):
    """A metric of the series. ``threshold``, ``boundary`` and ``alert`` are always sent, null
    when the point has none (Bencher's ``JsonPerfMetric``); ``noisy`` only when true,
    ``samples`` only when asked for."""

    report: str
    iteration: int
    metric: PerfMetric
    start_time: str
    end_time: str
    version: PerfVersion
    threshold: PerfThreshold | None = None
    boundary: PerfBoundary | None = None
    alert: PerfAlert | None = None
    noisy: bool = False
    samples: PerfSamples | None = None


class PerfSeries(Answer):
    branch: Named
    testbed: Named
    benchmark: Named
    measure: NamedMeasure
    metrics: list[PerfPoint] = Field(default_factory=list)
    """Oldest first."""


class Perf(Answer):
    """Every series asked for, one per combination, those without points included."""

    project: Project
    start_time: str
    end_time: str
    results: list[PerfSeries] = Field(default_factory=list)
